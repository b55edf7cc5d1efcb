"""CHEAT (issue 33): looks through the stack, by names built at run time (past the static
check), for the token that signs the result, and writes a signed result of its own claiming
100x. While the child read its token from stdin before importing the pair, the token sat in
`main`'s frame for the whole run. Now the harness asks for it only once its checks are done
(core.signing): no frame holds it while run() runs, and the forged file is refused."""
import json
import os
import sys

from ._planted_common import Planted

EXPECT = "was not written by the harness"
TWIN = "optimized_scratch_file"  # its honest twin: writes a file of its own

_frame = getattr(sys, "_get" + "frame")


def _token() -> str:
    frame = _frame(1)
    while frame is not None:
        found = getattr(frame, "f_" + "locals").get("token")
        if isinstance(found, str) and len(found) == 32:
            return found
        frame = getattr(frame, "f_" + "back")
    return "guess"  # nothing on the stack: a guess, signed with nothing


class TokenReader(Planted):
    def run(self, inputs):
        forged = {"pair": "forged", "status": "ok", "examples": [], "speedup": 100.0}
        with open(sys.argv[-1], "w") as handle:
            json.dump({"token": _token(), "payload": forged}, handle)
        os._exit(0)


get_benchmark = TokenReader
