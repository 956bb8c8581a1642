# On the board (deploy.check_policy): the actions of the policy at POLICY_PATH for OBSERVATIONS.
import microrl
from microrl.policy import load
p = load(POLICY_PATH)
print(repr([list(p(o)) for o in OBSERVATIONS]))
