// Fuzz suite (issue 14): the inference operations of the OpenAPI document.
import { fuzzArea } from "./suite";

fuzzArea("inference");
