"""What a run records: ``metrics.jsonl`` and TensorBoard event files, written by process 0 only.

:class:`RunRecorder` is the one writer of a run directory's records.  Every call of
:meth:`RunRecorder.write` appends one JSON line ``{"step", "time", **values}`` to
``workdir/metrics.jsonl`` and, for each value that is a real scalar, one TensorBoard scalar with
the same tag (the key) and step, in an event file in ``workdir`` itself.  Images (a grid of
training stimuli, the similarity scatter of :func:`similarity_scatter_image`) go to the event file
only (:meth:`RunRecorder.write_images`).  ``tensorboard --logdir WORKDIR`` shows them; with the
profiler's trace in ``WORKDIR/plugins/profile`` (:mod:`gensim_jax.training.profiling`) the same
run also has a profile tab.  ``tensorboard --logdir RUNS`` compares several run directories.

The event files are written with ``tensorboardX`` (MIT; ~90 kB wheel, pure Python; needs only
numpy and protobuf, which orbax already requires), not with TensorFlow's writer (TensorFlow is
imported only inside ``gensim_jax.data``, and a lean install may have none) nor with clu (which
pulls in TensorFlow).  Its synchronous ``EventsWriter`` is used (no background thread): one
record of a dozen scalars costs ~0.2 ms, most of it tensorboardX's pure-Python CRC32C.  tensorboardX imports PyTorch at import time when it is installed (for
its ``add_graph``), which costs ~1-3 s and ~180 MB on process 0; :func:`_import_tensorboardx`
keeps it from doing so when PyTorch is not already loaded.

On every process but 0 a recorder is a no-op: it creates no directory and no file.

Resume: a recorder opened with ``start_step=s`` drops the lines of ``metrics.jsonl`` past step
``s`` (and a line cut short by a killed process, named in a warning), and writes a TensorBoard
"session start" event at step ``s + 1``, which makes TensorBoard hide the events at steps ``> s`` of
the earlier event files, so both records hold what an uninterrupted run would have written.  The
``"time"`` field goes on from the last line kept: it counts the seconds the run has been recording,
over all its sessions (the time between a crash and the resume is not counted).

Hyperparameters: :meth:`RunRecorder.write_config` writes the run's config to TensorBoard's HParams
plugin (a "session start info" of the flattened config, so the HParams tab lists, filters and
compares the runs of a sweep by their settings; every scalar of the run, the final ``result/*``
included, is a metric there) and as a text summary ``config`` (the Text tab), next to the text
summary ``provenance`` (versions, git commit, command, devices).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from gensim_jax.jsonable import to_jsonable
from gensim_jax.ranks import spearman_r

__all__ = [
    "RunRecorder",
    "image_grid",
    "similarity_scatter_image",
    "truncate_history",
    "scalar_value",
    "METRICS_FILE",
]

#: The JSON-lines history of a run directory.
METRICS_FILE = "metrics.jsonl"


def scalar_value(x) -> Optional[float]:
    """``float(x)`` when ``x`` is one real number (Python, numpy or a 0-d/size-1 array), else None.

    Booleans count (0/1); strings, None, complex numbers and arrays of several numbers do not.
    """
    if isinstance(x, (float, int)):  # bool is an int
        return float(x)
    if isinstance(x, (np.generic, np.ndarray)) or hasattr(x, "__array__"):
        try:
            a = np.asarray(x)
        except Exception:  # noqa: BLE001 - anything that will not become an array is not a scalar
            return None
        if (
            a.size == 1
            and (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_)
            and not np.issubdtype(a.dtype, np.complexfloating)
        ):
            return float(a.reshape(()))
    return None


def truncate_history(path, step: int, *, warn=None) -> Optional[dict]:
    """Keep the lines of a ``metrics.jsonl`` with ``"step" <= step``; drop later and unreadable ones.

    An unreadable line is most often the last line of a process killed while writing it; every one
    dropped is named (file and line) in a warning on stderr (``warn(message)`` instead, when given).
    No file: nothing.  Returns the last record kept (None if none).
    """
    from gensim_jax.runs import iter_jsonl
    from gensim_jax.runs import warn as default_warn

    warn = default_warn if warn is None else warn
    path = Path(path)
    if not path.exists():
        return None
    kept, last = [], None
    for lineno, text, record, problem in iter_jsonl(path):
        if record is None:
            warn(f"{path}:{lineno}: {problem}; dropped")
        elif record["step"] <= step:
            kept.append(text)
            last = record
    path.write_text("".join(line + "\n" for line in kept))
    return last


def _import_tensorboardx():
    """Import ``tensorboardX`` without letting it import PyTorch (see the module docstring).

    When PyTorch is not loaded yet, ``sys.modules["torch"]`` is set to None for the duration of the
    import (tensorboardX then takes numpy arrays only, which is all this module gives it) and
    removed again, so a later ``import torch`` works as usual.
    """
    from gensim_jax._extras import require

    if "tensorboardX" in sys.modules or "torch" in sys.modules:
        return require("tensorboardX", "train")
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        tensorboardX = require("tensorboardX", "train")
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return tensorboardX


def _is_process_zero() -> bool:
    import jax

    return jax.process_index() == 0


class RunRecorder:
    """Writes a run's records (``metrics.jsonl`` + TensorBoard events) on process 0; no-op elsewhere.

    Example (one process, so this process writes)::

        >>> import tempfile, json, pathlib
        >>> d = tempfile.mkdtemp()
        >>> with RunRecorder(d, tensorboard=False) as rec:
        ...     _ = rec.write(10, {"loss": 0.5, "perf/step_time_s": 0.01})
        >>> json.loads(pathlib.Path(d, "metrics.jsonl").read_text())["loss"]
        0.5

    Args:
      workdir: the run directory (created on process 0).
      start_step: the step the run starts or resumes from; lines of ``metrics.jsonl`` past it are
        dropped and TensorBoard is told to hide the earlier files' events past it (module docstring).
      tensorboard: also write TensorBoard event files (needs ``tensorboardX``).
      is_writer: whether this process writes; default ``jax.process_index() == 0``.
      flush_secs: the event file is flushed (and fsynced) at the first write at least this many
        seconds after the last flush, and by ``flush``/``close``; ``metrics.jsonl`` at every write.
      max_image_side: images larger than this (pixels, either side) are shrunk to fit before they
        are encoded (tensorboardX checksums records in pure Python: ~0.4 us per byte).
      clock: the wall clock of the ``"time"`` field: seconds since the recorder was opened, plus the
        ``"time"`` of the last line kept from an earlier session of the run (resume).

    Attributes:
      active: whether this process writes.
      metrics_path: ``workdir/metrics.jsonl``.
    """

    def __init__(
        self,
        workdir,
        *,
        start_step: int = 0,
        tensorboard: bool = True,
        is_writer: Optional[bool] = None,
        flush_secs: float = 30.0,
        max_image_side: int = 1024,
        clock=time.time,
    ):
        if int(start_step) < 0:
            raise ValueError(f"RunRecorder: start_step must be >= 0, got {start_step}")
        self.workdir = Path(workdir)
        self.metrics_path = self.workdir / METRICS_FILE
        self.active = _is_process_zero() if is_writer is None else bool(is_writer)
        self._clock = clock
        self._t0 = clock()
        self._time_offset = 0.0
        self._jsonl = None
        self._tb = None
        self._summary_pb2 = None
        self._event_pb2 = None
        self._flush_secs = float(flush_secs)
        self._last_flush = time.monotonic()
        self.max_image_side = int(max_image_side)
        self._closed = False
        if not self.active:
            return
        self.workdir.mkdir(parents=True, exist_ok=True)
        last = truncate_history(self.metrics_path, int(start_step))
        if last is not None and scalar_value(last.get("time")) is not None:
            self._time_offset = float(last["time"])  # `time` spans resumes
        self._jsonl = self.metrics_path.open("a", encoding="utf-8")
        if tensorboard:
            _import_tensorboardx()
            from tensorboardX.event_file_writer import EventsWriter
            from tensorboardX.proto import event_pb2, summary_pb2

            self._summary_pb2, self._event_pb2 = summary_pb2, event_pb2
            # tensorboardX names files events.out.tfevents.<seconds>.<host><suffix>: a suffix with
            # the nanosecond clock keeps two writers of the same second apart and in order.
            # EventsWriter writes synchronously (no thread); we flush every flush_secs.
            suffix = f".{time.time_ns():020d}.{os.getpid()}"
            self._tb = EventsWriter(str(self.workdir / "events"), suffix)
            if int(start_step) > 0:
                self._tb.write_event(
                    event_pb2.Event(
                        step=int(start_step) + 1,
                        wall_time=time.time(),
                        session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START),
                    )
                )
                self._tb.flush()

    # -- writing -------------------------------------------------------------------------------
    def write(self, step: int, values: Mapping[str, Any], *, wall_time: Optional[float] = None) -> dict:
        """Record ``values`` at ``step``; returns the record ``{"step", "time", **values}``.

        ``values`` must already be on the host (``jax.device_get``), or the call waits for the
        device.  Keys ``"step"`` and ``"time"`` are reserved (``"time"`` may be given to override
        the recorder's clock).  Every real scalar goes to TensorBoard as ``simple_value`` (float32)
        with its key as tag; other values (lists, strings) go to ``metrics.jsonl`` only.
        """
        if "step" in values:
            raise ValueError("RunRecorder.write: 'step' is reserved (pass it as the first argument)")
        step = int(step)
        values = dict(values)
        t = values.pop("time", None)
        now = self._time_offset + float(self._clock() - self._t0)
        record = {"step": step, "time": now if t is None else t, **values}
        if not self.active:
            return record
        self._check_open()
        self._jsonl.write(json.dumps(to_jsonable(record), default=repr) + "\n")
        self._jsonl.flush()
        if self._tb is not None:
            pb = self._summary_pb2
            items = []
            for k, v in values.items():
                s = scalar_value(v)
                if s is not None:
                    items.append(pb.Summary.Value(tag=str(k), simple_value=s))
            if items:
                self._write_event(pb.Summary(value=items), step, wall_time)
        return record

    def write_config(
        self, config: Mapping[str, Any], *, step: int = 0, provenance: Optional[Mapping[str, Any]] = None
    ) -> dict:
        """Write ``config`` to TensorBoard: its HParams plugin and a text summary ``config``; returns the hparams.

        ``provenance`` (what produced the run, :func:`gensim_jax.provenance.provenance`) is written as
        a second text summary, ``provenance``.

        Nested sections are flattened to ``section.key``; numbers, strings and booleans are
        hyperparameters as they are, lists and other values as compact JSON, None is left out.
        The HParams tab then shows one row per run with these columns, and every scalar the run
        records (``loss``, ``eval/*``, the final ``result/*``) as its metrics (their last values).
        No experiment summary is written, so TensorBoard collects the hyperparameters of all the
        runs under its ``--logdir`` (a sweep of several workdirs included).  No-op without TensorBoard.
        """
        from gensim_jax.config import flatten

        hparams: dict = {}
        for k, v in flatten(to_jsonable(dict(config))).items():
            if v is None:
                continue
            hparams[k] = v if isinstance(v, (bool, int, float, str)) else json.dumps(v, separators=(",", ":"))
        if not self.active or self._tb is None:
            return hparams
        self._check_open()
        from tensorboardX import summary as tbx_summary

        _, session_start, _ = tbx_summary.hparams(hparams, {})
        self._write_event(session_start, int(step))
        text = "```\n" + json.dumps(to_jsonable(dict(config)), indent=2, sort_keys=True, default=repr) + "\n```"
        self._write_event(tbx_summary.text("config", text), int(step))
        if provenance is not None:
            text = "```\n" + json.dumps(to_jsonable(dict(provenance)), indent=2, default=repr) + "\n```"
            self._write_event(tbx_summary.text("provenance", text), int(step))
        self._tb.flush()
        return hparams

    def _write_event(self, summary, step: int, wall_time: Optional[float] = None) -> None:
        self._tb.write_event(
            self._event_pb2.Event(
                step=int(step), summary=summary, wall_time=time.time() if wall_time is None else wall_time
            )
        )
        now = time.monotonic()
        if now - self._last_flush >= self._flush_secs:
            self._tb.flush()
            self._last_flush = now

    def write_images(self, step: int, images: Mapping[str, Any]) -> None:
        """Record images at ``step`` in TensorBoard (e.g. ``{"train/stimuli": image_grid(x)}``).

        Each image is ``(H, W)``, ``(H, W, 1)``, ``(H, W, 3)`` or ``(H, W, 4)``: uint8 in [0, 255] or
        floats in [0, 1] (clipped).  ``ValueError`` for any other shape.  No-op without TensorBoard.
        """
        arrays = {str(tag): _to_uint8_hwc(img, tag) for tag, img in images.items()}  # validate everywhere
        if not self.active or self._tb is None:
            return
        self._check_open()
        import io

        from PIL import Image

        pb = self._summary_pb2
        items = []
        for tag, a in arrays.items():
            buf = io.BytesIO()
            im = Image.fromarray(a[..., 0] if a.shape[-1] == 1 else a)
            if max(a.shape[:2]) > self.max_image_side:
                im.thumbnail((self.max_image_side, self.max_image_side), Image.Resampling.LANCZOS)
            im.save(buf, format="PNG")
            items.append(
                pb.Summary.Value(
                    tag=tag,
                    image=pb.Summary.Image(
                        height=im.height, width=im.width, colorspace=a.shape[2], encoded_image_string=buf.getvalue()
                    ),
                )
            )
        self._write_event(pb.Summary(value=items), int(step))

    def flush(self) -> None:
        """Push everything written so far to disk."""
        if self._jsonl is not None and not self._closed:
            self._jsonl.flush()
        if self._tb is not None and not self._closed:
            self._tb.flush()
            self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush and close the files (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._jsonl is not None:
            self._jsonl.close()
        if self._tb is not None:
            self._tb.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"RunRecorder for {self.workdir} is closed")

    def __enter__(self) -> "RunRecorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- images ------------------------------------------------------------------------------------
def _to_uint8_hwc(img, name="image") -> np.ndarray:
    a = np.asarray(img)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[-1] not in (1, 3, 4) or 0 in a.shape:
        raise ValueError(f"{name}: an image is (H, W) or (H, W, C) with C in 1, 3, 4; got shape {np.shape(img)}")
    if a.dtype == np.uint8:
        return a
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name}: integer images must be uint8, got {a.dtype}")
    a = np.nan_to_num(a.astype(np.float64), nan=0.0)
    return np.round(np.clip(a, 0.0, 1.0) * 255.0).astype(np.uint8)


def image_grid(images, ncol: Optional[int] = None, *, pad: int = 2, pad_value: int = 255) -> np.ndarray:
    """Tile a batch of images into one ``(H', W', C)`` uint8 image (the stimuli grid at step 0).

    Args:
      images: ``(N, H, W)`` or ``(N, H, W, C)`` with ``C`` in 1, 3, 4.  uint8 is taken as is; floats
        in [0, 1] are scaled by 255; floats outside [0, 1] (e.g. images standardised with the
        ImageNet mean and deviation) are min-max scaled over the whole batch to [0, 255].
      ncol: images per row; default ``ceil(sqrt(N))``.
      pad, pad_value: pixels between and around the tiles, and their grey level.

    Returns:
      ``(rows * (H + pad) + pad, ncol * (W + pad) + pad, C)`` uint8, row-major (image ``i`` at row
      ``i // ncol``, column ``i % ncol``).
    """
    x = np.asarray(images)
    if x.ndim == 3:
        x = x[..., None]
    if x.ndim != 4 or x.shape[0] == 0 or x.shape[-1] not in (1, 3, 4):
        raise ValueError(
            f"image_grid: images must be (N, H, W) or (N, H, W, C) with N >= 1 and C in 1, 3, 4; "
            f"got shape {np.shape(images)}"
        )
    if x.dtype != np.uint8:
        if not np.issubdtype(x.dtype, np.floating):
            raise ValueError(f"image_grid: images must be uint8 or floating, got {x.dtype}")
        x = np.nan_to_num(x.astype(np.float64))
        lo, hi = float(x.min()), float(x.max())
        if lo < 0.0 or hi > 1.0:
            x = (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)
        x = np.round(x * 255.0).astype(np.uint8)
    n, h, w, c = x.shape
    ncol = int(math.ceil(math.sqrt(n))) if ncol is None else int(ncol)
    if ncol < 1 or pad < 0:
        raise ValueError(f"image_grid: need ncol >= 1 and pad >= 0, got ncol={ncol}, pad={pad}")
    ncol = min(ncol, n)
    nrow = -(-n // ncol)
    grid = np.full((nrow * (h + pad) + pad, ncol * (w + pad) + pad, c), pad_value, np.uint8)
    for i in range(n):
        r, q = divmod(i, ncol)
        y0, x0 = pad + r * (h + pad), pad + q * (w + pad)
        grid[y0 : y0 + h, x0 : x0 + w] = x[i]
    return grid


def _offdiagonal_pairs(embedding_sim, target_sim):
    e, t = np.asarray(embedding_sim, np.float64), np.asarray(target_sim, np.float64)
    if e.shape != t.shape:
        raise ValueError(f"similarity_scatter_image: embedding_sim {e.shape} and target_sim {t.shape} differ in shape")
    if e.ndim == 2 and e.shape[0] == e.shape[1]:
        iu = np.triu_indices(e.shape[0], k=1)  # each unordered pair once, no self-similarity
        e, t = e[iu], t[iu]
    elif e.ndim != 1:
        raise ValueError(f"similarity_scatter_image: give (B, B) matrices or (P,) pair vectors, got {e.shape}")
    keep = np.isfinite(e) & np.isfinite(t)
    return e[keep], t[keep]


def similarity_scatter_image(
    embedding_sim,
    target_sim,
    *,
    title: Optional[str] = None,
    xlabel: str = "target: log generative similarity",
    ylabel: str = "embedding similarity",
    size: Sequence[float] = (4.0, 4.0),
    dpi: int = 80,
    max_points: int = 4096,
    seed: int = 0,
) -> np.ndarray:
    """Scatter of embedding similarity against target similarity for one batch, as an RGB array.

    The quantity GenSim regresses (paper Eq. 2: embedding similarity onto the log generative
    similarity of Eq. 1).  Each unordered pair ``i < j`` of a ``(B, B)`` matrix is one point
    (the diagonal is left out); ``(P,)`` vectors are taken as pairs already.  The title gives the
    Pearson and Spearman correlations over all pairs; at most ``max_points`` of them (a subset
    drawn with ``numpy.random.default_rng(seed)``) are plotted.  Drawn on a
    ``matplotlib.figure.Figure`` with the Agg canvas, so it changes no global matplotlib state.

    Returns:
      ``(size[1] * dpi, size[0] * dpi, 3)`` uint8.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    e, t = _offdiagonal_pairs(embedding_sim, target_sim)
    fig = Figure(figsize=tuple(size), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    shown = np.arange(len(e))
    if len(e) > int(max_points):
        shown = np.sort(np.random.default_rng(seed).choice(len(e), int(max_points), replace=False))
    ax.scatter(t[shown], e[shown], s=4, alpha=0.5, linewidths=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    stats = f"{len(e)} pairs" + (f" ({len(shown)} shown)" if len(shown) < len(e) else "")
    if len(e) > 2 and np.std(e) > 0 and np.std(t) > 0:
        stats += f", Pearson r={np.corrcoef(t, e)[0, 1]:.3f}, Spearman={spearman_r(t, e):.3f}"
    ax.set_title(stats if title is None else f"{title}\n{stats}", fontsize=8)
    fig.tight_layout()
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()
