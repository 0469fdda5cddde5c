#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A minimal agent tool loop on sandboxd.

A scripted stand-in for a language model proposes a program; the loop
writes it into a worker, runs it, reads the result and, on failure, hands
the error back to the "model", which proposes a fix, until the program
prints what the task asked for or the attempts run out. Replace
``ScriptedModel`` by a real model's client to make it an agent.

    python3 agent_loop.py [--class standard] [--attempts 3]

Exit status 0 when the task was solved, 1 when it was not.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import List, Optional, Tuple

import sandboxd

TASK = "Print the sum of the squares of 1 to 10."
EXPECTED = "385"


@dataclass
class Turn:
    """One attempt: the code the model wrote and what running it gave."""

    code: str
    result: Optional[sandboxd.Result] = None


class ScriptedModel:
    """Stands in for a model: its first answer has a bug (a NameError), its
    second fixes it after reading the error, as a model would."""

    ANSWERS = [
        "total = sum(i * i for i in range(1, 11))\nprint(totl)\n",
        "total = sum(i * i for i in range(1, 11))\nprint(total)\n",
    ]

    def propose(self, task: str, history: List[Turn]) -> str:
        """The next program for ``task``, given the attempts so far."""
        if history and history[-1].result is not None:
            err = history[-1].result.stderr.decode(errors="replace")
            assert err, "the model is only asked again after a failure"
        return self.ANSWERS[min(len(history), len(self.ANSWERS) - 1)]


def solve(worker: sandboxd.Worker, model: ScriptedModel, attempts: int) -> Tuple[List[Turn], bool]:
    """The loop: propose, write, run, read, retry. Returns every turn and
    whether the last one solved the task."""
    history: List[Turn] = []
    for n in range(1, attempts + 1):
        turn = Turn(model.propose(TASK, history))
        history.append(turn)
        worker.files.write("solution.py", turn.code)
        turn.result = worker.run(["python3", "solution.py"], timeout=60)
        out = turn.result.stdout.decode(errors="replace").strip()
        print(f"attempt {n}: exit {turn.result.exit_code}, stdout {out!r}")
        if turn.result.exit_code == 0 and out == EXPECTED:
            return history, True
        print("  error: " + turn.result.stderr.decode(errors="replace").strip().splitlines()[-1]
              if turn.result.stderr else "  wrong answer")
    return history, False


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--class", dest="cls", default="standard", help="the worker's class")
    ap.add_argument("--attempts", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        with sandboxd.Worker(cls=args.cls, memory="256M", idle=120) as w:
            print(f"worker {w.id} ({w.cls})")
            history, solved = solve(w, ScriptedModel(), args.attempts)
            check = w.files.read("solution.py").decode()
    except sandboxd.errors.SandboxdError as e:
        print(f"agent_loop: {e}", file=sys.stderr)
        return 2
    print(f"{'solved' if solved else 'not solved'} after {len(history)} attempt(s); "
          f"final program:\n{check}", end="")
    return 0 if solved else 1


if __name__ == "__main__":
    sys.exit(main())
