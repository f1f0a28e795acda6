// Fuzz suite (issue 14): the keys operations of the OpenAPI document.
import { fuzzArea } from "./suite";

fuzzArea("keys");
