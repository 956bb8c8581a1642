# On the board (deploy.check_policy): with REFERENCES, the largest difference of the policy at
# POLICY_PATH from its file's reference actions, as "worst tolerance count k i here stored" (k -1:
# no difference); else its actions for OBSERVATIONS.
import microrl
from microrl.policy import load
p = load(POLICY_PATH)
if REFERENCES:
    from microrl.references import compare_file
    worst, tol, count, at = compare_file(p, POLICY_PATH)
    print(worst, tol, count, *(at or (-1, -1, 0.0, 0.0)))
else:
    print(repr([list(p(o)) for o in OBSERVATIONS]))
