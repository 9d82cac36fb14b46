// The CRDs' CEL rules as the tests check inputs with them: read from crds/ and evaluated, unmemoized.
import { crdRuleChecker } from '../../src/api/crd-rules.js';
import { readCrdTexts } from '../../src/inputs/crd-rule-verdicts.js';

/** Checks an object against its CRD's rules (src/api/crd-rules.ts), as the CLI and the controller do. */
export const checkCrdRules = crdRuleChecker(readCrdTexts());
