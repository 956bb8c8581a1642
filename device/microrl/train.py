# Train TD3 on Pendulum end to end, with evaluations along the way.
from .evaluate import evaluate
from .task import Env
from .tasks import pendulum
from .td3 import TD3, TD3Config


def train_pendulum(steps=10000, seed=0, eval_every=1000, eval_episodes=10, progress=None, **settings):
    """Returns (agent, evaluations) where evaluations is a list of (step, mean, std).
    progress(step, agent, last_eval) is called after every evaluation and episode end when given."""
    config = TD3Config(steps=steps, **settings)
    agent = TD3(Env(pendulum), config, seed)
    eval_env = Env(pendulum)
    evaluations = []
    last = None
    for step in range(1, steps + 1):
        finished = agent.step()
        if eval_every and (step % eval_every == 0 or step == steps):
            mean, std, _ = evaluate(agent.policy(), eval_env, eval_episodes, seed=seed + 10007)
            last = (step, mean, std)
            evaluations.append(last)
            if progress:
                progress(step, agent, last)
        elif finished is not None and progress:
            progress(step, agent, last)
    return agent, evaluations
