"""Runs an exported ONNX policy in onnxruntime on observations and compares its actions with
Ember's own. Used by tests/export_onnx.rs.

Usage: python onnx_check.py MODEL OBS ACTIONS OBS_DIM KIND [C,H,W]
  OBS, ACTIONS: little-endian float32 files (rows × obs_dim; rows × act_dim, or rows of
  action indices for KIND=discrete; rows × actions of DQN's action values for
  KIND=q_values, compared with the model's `q_values`); KIND: continuous, discrete or
  q_values. With C,H,W the
  observations are uint8 frame stacks (rows × C × H × W bytes) instead.
Prints `max_abs_diff <value>` (continuous, q_values) or `mismatches <count>` (discrete).
"""

import sys

import numpy as np
import onnxruntime as ort


def main() -> None:
    model, obs_file, act_file, obs_dim, kind = sys.argv[1:6]
    if len(sys.argv) > 6:
        shape = [int(d) for d in sys.argv[6].split(",")]
        obs = np.fromfile(obs_file, dtype=np.uint8).reshape([-1] + shape)
        assert int(obs_dim) == int(np.prod(shape)), (obs_dim, shape)
    else:
        obs = np.fromfile(obs_file, dtype="<f4").reshape(-1, int(obs_dim))
    ours = np.fromfile(act_file, dtype="<f4").reshape(len(obs), -1)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs"], session.get_inputs()
    output = "q_values" if kind == "q_values" else "action"
    (theirs,) = session.run([output], {"obs": obs})
    if kind == "discrete":
        assert theirs.dtype == np.int64 and theirs.shape == (len(obs),), (theirs.dtype, theirs.shape)
        print("mismatches", int((theirs != ours[:, 0].astype(np.int64)).sum()))
    else:
        assert theirs.dtype == np.float32 and theirs.shape == ours.shape, (theirs.dtype, theirs.shape)
        print("max_abs_diff", float(np.abs(theirs - ours).max()))


if __name__ == "__main__":
    main()
