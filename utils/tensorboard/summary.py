"""Summary protocol buffers from tensors (torch.utils.tensorboard.summary): what each SummaryWriter.add_*
writes, the same messages torch's writer builds."""
from __future__ import annotations

from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["make_np", "scalar", "histogram", "histogram_raw", "make_histogram", "text", "hparams", "image",
           "make_image", "convert_to_HWC"]


def make_np(x: Any) -> np.ndarray:
    """A NumPy array of a tensor, an array or a Python number."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        if x.device.type == "meta":
            return np.random.randn(1)  # (torch logs noise for a meta tensor, which has no values)
        x = x.detach()
        if x.dtype is dt.bfloat16:
            x = x.to(dt.float16)
        return x.cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def scalar(name: str, tensor: Any, collections: Any = None, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    """A scalar summary (simple_value; with new_style a float or double tensor for the scalars plugin)."""
    arr = make_np(tensor).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {arr.size} and "
                             f"{arr.ndim} dimensions.")
    value = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    proto = TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[value], dtype="DT_FLOAT")
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=meta)])


def histogram_raw(name: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> Summary:
    """A histogram summary from precomputed statistics and buckets."""
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares, bucket_limit=bucket_limits,
                          bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """A histogram summary of `values` with NumPy's `bins`."""
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(make_np(values).astype(float), bins,
                                                                         max_bins))])


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None = None) -> HistogramProto:
    """The HistogramProto of `values`: TensorBoard keeps right bin limits only, so the buckets are trimmed to the
    occupied range plus one empty bucket on the left; `max_bins` merges neighbouring buckets."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        extra = len(counts) % group
        if extra:
            counts = np.concatenate([counts, np.zeros(group - extra, counts.dtype)])
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    occupied = np.cumsum(counts > 0)
    start, end = np.searchsorted(occupied, [0, occupied[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def text(tag: str, text: str) -> Summary:
    """A text summary (the text plugin's string tensor, tagged `<tag>/text_summary`)."""
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def hparams(hparam_dict: dict | None = None, metric_dict: dict | None = None,
            hparam_domain_discrete: dict | None = None) -> tuple:
    """The hparams plugin's experiment, session-start and session-end summaries."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION, PLUGIN_NAME,
                                                      SESSION_END_INFO_TAG, SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    infos = []
    ssi = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            ssi.hparams[k].number_value = make_np(v)[0]
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
            continue
        # (bool is an int: torch's order of checks makes a bool hparam a FLOAT64 number, as here)
        kind = ("number_value", "DATA_TYPE_FLOAT64") if isinstance(v, (int, float)) else \
            ("string_value", "DATA_TYPE_STRING") if isinstance(v, str) else \
            ("bool_value", "DATA_TYPE_BOOL") if isinstance(v, bool) else None
        if kind is None:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(ssi.hparams[k], kind[0], v)
        domain = None
        if k in domains:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{kind[0]: d}) for d in domains[k]])
        infos.append(HParamInfo(name=k, type=DataType.Value(kind[1]), domain_discrete=domain))

    def tagged(tag: str, **content) -> Summary:
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content)
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=PLUGIN_NAME,
                                                                      content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=meta)])
    exp = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (tagged(EXPERIMENT_TAG, experiment=exp), tagged(SESSION_START_INFO_TAG, session_start_info=ssi),
            tagged(SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802 - torch's name
    """An image array in `input_format` (a permutation of some of N, C, H, W) as HWC with 3 channels (or 4)."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: {tensor.shape}, "
                             f"input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return _grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        return np.concatenate([hwc, hwc, hwc], 2) if hwc.shape[2] == 1 else hwc
    if len(input_format) == 2:
        hw = tensor.transpose([input_format.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"Unsupported input_format {input_format}")


def _grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N images (NCHW) tiled into one CHW canvas, ncols per row (torch's make_grid layout for TensorBoard)."""
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, c, h, w = images.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(float(n) / ncols))
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
    return canvas


def image(tag: str, tensor: Any, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """An image summary (PNG-encoded with Pillow, as torch's): floats in [0, 1] are scaled to 0-255."""
    arr = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if arr.dtype == np.uint8 else 255
    arr = (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(arr, rescale=rescale))])


def make_image(tensor: np.ndarray, rescale: float = 1, rois: Any = None, labels: Any = None) -> Summary.Image:
    """A Summary.Image of an HWC uint8 array (Pillow encodes the PNG)."""
    import io

    from PIL import Image
    height, width, channel = tensor.shape
    pil = Image.fromarray(tensor)
    pil = pil.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    pil.save(out, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channel, encoded_image_string=out.getvalue())
