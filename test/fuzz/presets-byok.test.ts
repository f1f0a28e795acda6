// Fuzz suite (issue 14): the presets-byok operations of the OpenAPI document.
import { fuzzArea } from "./suite";

fuzzArea("presets-byok");
