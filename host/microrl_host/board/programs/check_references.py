# On the board (deploy.check_policy): the largest difference of the policy at POLICY_PATH from its
# file's reference actions, as "worst tolerance count k i here stored" (k -1: no difference). Its
# own program, apart from check_policy.py: a 64K board compiles only what it runs.
from microrl.policy import load
from microrl.references import compare_file
p = load(POLICY_PATH)
worst, tol, count, at = compare_file(p, POLICY_PATH)
print(worst, tol, count, *(at or (-1, -1, 0.0, 0.0)))
