// Fuzz suite (issue 14): the guardrails operations of the OpenAPI document.
import { fuzzArea } from "./suite";

fuzzArea("guardrails");
