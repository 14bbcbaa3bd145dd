"""SB3's SAC on Pendulum-v1 with Ember's return-weighted replay (docs/python.md).

Run: scripts/check-python.sh (builds and installs the wheel into .venv-torch), then
    .venv-torch/bin/python crates/emberlab-py/examples/sb3_return_weighted.py [steps]
"""

import sys

from stable_baselines3 import SAC
from stable_baselines3.common.evaluation import evaluate_policy

from emberlab.sb3 import ReturnWeightedReplayBuffer


def main(steps):
    model = SAC("MlpPolicy", "Pendulum-v1", replay_buffer_class=ReturnWeightedReplayBuffer,
                replay_buffer_kwargs=dict(seed=0), learning_starts=200, seed=0, verbose=0)
    model.learn(steps)
    mean, std = evaluate_policy(model, model.get_env(), n_eval_episodes=10, deterministic=True)
    print(f"SAC Pendulum-v1, {steps} steps with return-weighted replay: {mean:.1f} ± {std:.1f}")
    print(model.replay_buffer.ember)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
