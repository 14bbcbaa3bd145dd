"""Runs an exported ONNX policy in onnxruntime on observations and compares its actions with
Ember's own. Used by tests/export_onnx.rs.

Usage: python onnx_check.py MODEL OBS ACTIONS OBS_DIM KIND
  OBS, ACTIONS: little-endian float32 files (rows × obs_dim; rows × act_dim, or rows of
  action indices for KIND=discrete); KIND: continuous or discrete.
Prints `max_abs_diff <value>` (continuous) or `mismatches <count>` (discrete).
"""

import sys

import numpy as np
import onnxruntime as ort


def main() -> None:
    model, obs_file, act_file, obs_dim, kind = sys.argv[1:6]
    obs = np.fromfile(obs_file, dtype="<f4").reshape(-1, int(obs_dim))
    ours = np.fromfile(act_file, dtype="<f4").reshape(len(obs), -1)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["obs"], session.get_inputs()
    (theirs,) = session.run(["action"], {"obs": obs})
    if kind == "discrete":
        assert theirs.dtype == np.int64 and theirs.shape == (len(obs),), (theirs.dtype, theirs.shape)
        print("mismatches", int((theirs != ours[:, 0].astype(np.int64)).sum()))
    else:
        assert theirs.dtype == np.float32 and theirs.shape == ours.shape, (theirs.dtype, theirs.shape)
        print("max_abs_diff", float(np.abs(theirs - ours).max()))


if __name__ == "__main__":
    main()
