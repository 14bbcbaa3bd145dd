"""Reads every scalar of the TensorBoard event files in a folder with TensorBoard's own
EventAccumulator and prints one `tag<TAB>step<TAB>value` line per scalar, sorted by tag and
then step. Used by tests/tensorboard_reader.rs to check emberlab-cli's event-file writer.

Usage: python read_tensorboard.py LOGDIR
"""

import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: read_tensorboard.py LOGDIR")
    # size_guidance 0 keeps every scalar (the default samples down to 10,000 per tag).
    acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
    acc.Reload()
    for tag in sorted(acc.Tags()["scalars"]):
        for event in sorted(acc.Scalars(tag), key=lambda e: e.step):
            print(f"{tag}\t{event.step}\t{event.value!r}\t{event.wall_time!r}")


if __name__ == "__main__":
    main()
