"""Read TensorBoard event files back with TensorFlow's own record reader and protos.

Independent of the writer (tensorboardX): TensorFlow's ``TFRecordDataset`` checks every record's
CRC, and its ``Event`` proto parses the records.  Applies TensorBoard's purge rule: a
``SessionLog.START`` event at step ``s`` hides the events at steps ``>= s`` read before it.
"""

from __future__ import annotations

from pathlib import Path


def event_files(logdir) -> list[Path]:
    return sorted(Path(logdir).glob("events.out.tfevents.*"))


def read_events(logdir):
    """``(scalars, images)``: ``{tag: {step: float}}`` and ``{tag: {step: (h, w, c, png_bytes)}}``."""
    import tensorflow as tf
    from tensorflow.core.util import event_pb2

    tf.config.set_visible_devices([], "GPU")
    scalars: dict = {}
    images: dict = {}
    for path in event_files(logdir):  # TensorBoard reads a run's files in name order
        for raw in tf.data.TFRecordDataset(str(path)):
            ev = event_pb2.Event.FromString(raw.numpy())
            if ev.HasField("session_log") and ev.session_log.status == event_pb2.SessionLog.START:
                for table in (scalars, images):
                    for steps in table.values():
                        for s in [s for s in steps if s >= ev.step]:
                            del steps[s]
            for v in ev.summary.value:
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    scalars.setdefault(v.tag, {})[ev.step] = v.simple_value
                elif kind == "image":
                    im = v.image
                    images.setdefault(v.tag, {})[ev.step] = (
                        im.height,
                        im.width,
                        im.colorspace,
                        im.encoded_image_string,
                    )
    return scalars, images
