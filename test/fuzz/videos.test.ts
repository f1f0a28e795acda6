// Fuzz suite (issue 14): the videos operations of the OpenAPI document.
import { fuzzArea } from "./suite";

fuzzArea("videos");
