"""Issue 30 (12): the fuzzer's own blind spot. Its noise could complete into a valid frame (a
frame cut one byte short of its end, when that byte is 0xA5, completed by the next request's
first byte), and the request whose bytes it took was counted lost: `bench/serial_fuzz.py --seed
2 --batch 249` and `--seed 3 --noise 5 --batch 100` lost 1 each, the same every run. Checked here
without a board: the batches' bytes, decoded as the board decodes them, hold every good request
whole, and no noise item is the start of a valid frame that runs past its end."""
import random

import pytest

from microrl import protocol as P
from microrl_host.board.serial_fuzz import SENTINEL_SEQS, batch_stream


def _batches(seed, requests, batch, noise, obs_dim=3):
    rng = random.Random(seed)  # as fuzz() draws them
    done = 0
    while done < requests:
        n = min(batch, requests - done, SENTINEL_SEQS[0] - 1)
        yield batch_stream(rng, n, obs_dim, noise, {})
        done += n


@pytest.mark.parametrize("seed, batch, noise", [(2, 249, 1.0), (3, 100, 5.0), (0, 200, 1.0), (1, 200, 3.0)])
def test_every_request_in_the_fuzz_streams_decodes_whole(seed, batch, noise):
    decoder = P.Decoder()
    lost = []
    requests = 0
    for stream, expected, frames, _ in _batches(seed, 10000, batch, noise):
        # the batch, then the sentinel the fuzzer writes at once after it, then the line's silence
        got = decoder.feed_bytes(stream + P.encode(P.PING, SENTINEL_SEQS[0])) + decoder.flush()
        whole = {P.encode(*r) for r in got if not isinstance(r, int)}
        lost += [seq for seq, frame in frames.items() if frame not in whole]
        requests += len(expected)
    assert requests == 10000 and lost == []
