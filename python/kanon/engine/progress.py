"""Long statements with a progress bar, cancelled cleanly by Ctrl-C.

The statement runs in the calling thread while a helper thread draws a bar on standard
error once it has run for ``after`` seconds: the rows the kernels have finished (they
count them as packs and blocks complete, ``kanon._core.progress``), the elapsed time and
an estimate of the time left. Ctrl-C interrupts DuckDB (which checks for it while it
runs) and asks the kernels to stop at their next block; the statement ends and
``KeyboardInterrupt`` is raised: nothing is committed by an interrupted statement.
(DuckDB's Python binding must run the statement in the main thread to be interrupted
safely: a statement interrupted in another thread leaves its connection unusable.)
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from kanon import _core

if TYPE_CHECKING:
    from collections.abc import Callable

    import duckdb

__all__ = ["format_bar", "run_with_progress"]

_WIDTH = 30


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def format_bar(label: str, done: int, total: int, elapsed: float) -> str:
    """One line of the bar: label, bar, rows done, elapsed and estimated time left."""
    if total <= 0:
        return f"{label}: {_clock(elapsed)} elapsed"
    share = min(1.0, done / total)
    filled = round(share * _WIDTH)
    left = "?" if done == 0 else _clock(elapsed * (total - done) / done)
    return (
        f"{label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {done:,}/{total:,} rows "
        f"{share:4.0%}  {_clock(elapsed)} elapsed, ~{left} left"
    )


def run_with_progress(
    con: duckdb.DuckDBPyConnection,
    work: Callable[[], Any],
    *,
    rows: int,
    label: str = "anonymizing",
    after: float = 1.5,
    stream: TextIO | None = None,
    show: bool = True,
) -> Any:
    """Run ``work()`` (statements on ``con``) with a progress bar; return its result.

    The statement runs in the calling thread (DuckDB interrupts it on Ctrl-C there); a
    helper thread draws the bar. During the run, Ctrl-C also asks the kernels to stop at
    their next block (``kanon._core.progress_cancel``).

    Args:
        con: the connection ``work`` executes on.
        work: the job; its exceptions are re-raised.
        rows: the rows the kernels will report finished (the bar's total).
        label: the bar's label.
        after: seconds before the bar appears (short runs print nothing).
        stream: where the bar goes (default: standard error).
        show: False runs without a bar (Ctrl-C still cancels cleanly).

    Raises:
        KeyboardInterrupt: the run was interrupted (Ctrl-C) and has ended.
    """
    out = sys.stderr if stream is None else stream
    done_event = threading.Event()
    interrupted = threading.Event()
    started = time.perf_counter()
    drawn: list[str] = []

    def draw() -> None:
        while not done_event.wait(0.1):
            elapsed = time.perf_counter() - started
            if elapsed < after:
                continue
            finished, total = _core.progress()
            line = format_bar(label, finished, total, elapsed)
            if not drawn or line != drawn[-1]:  # redrawn when it changes
                out.write("\r" + line.ljust(len(drawn[-1]) if drawn else 0))
                out.flush()
                drawn.append(line)

    def on_sigint(signum: int, frame: Any) -> None:
        interrupted.set()
        _core.progress_cancel()
        raise KeyboardInterrupt

    _core.progress_reset(rows)
    painter = threading.Thread(target=draw, name="kanon-progress", daemon=True)
    if show:
        painter.start()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        result = work()
    except BaseException as exc:
        if interrupted.is_set() and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        done_event.set()
        if show:
            painter.join()
        _core.progress_reset(0)
        if drawn:
            out.write("\n")
            out.flush()
    if drawn:
        line = format_bar(label, rows, rows, time.perf_counter() - started)
        out.write(line.ljust(len(drawn[-1])) + "\n")
        out.flush()
    return result
