"""``transforms.*``: affine transform matrices (DALI's ``fn.transforms`` family).

Each operator makes one float32 matrix per sample, ``ndim x (ndim + 1)``
(2x3 for 2D, 3x4 for 3D), mapping a point ``p`` to ``M[:, :ndim] @ p +
M[:, ndim]``. The matrices feed ``fn.coord_transform(MT=...)`` and
``fn.warp_affine(matrix=...)``. Given an input matrix, an operator's own
transform ``A`` is applied after it (``A @ input``), or before it with
``reverse_order=True`` (``input @ A``); ``combine`` multiplies its inputs the
same way (``[T1, T2, T3] -> T3 @ T2 @ T1``).

The arithmetic is DALI's, in float32: angles in degrees become radians as
``float32(angle) * float32(pi / 180)``, with correctly rounded ``cos``,
``sin``, ``tan``; a centre ``c`` adds the translation ``A @ (-c) + c``;
``crop`` scales by ``(to_end - to_start) / (from_end - from_start)`` and
translates by ``to_start - from_start * scale``.

Arguments may be per sample (``DataNode``s such as ``fn.random.uniform``);
Arguments marked with ``fn.per_frame`` give one matrix per frame: a ``(frames, ndim, ndim + 1)``
sample (DALI's per-frame transforms, e.g. one crop window per frame).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError, SampleError
from ..graph import DataNode, add_node, split_arguments
from ..operator import Chunk, Operator
from ..types import Device, Number
from .arguments import fn_function
from .boxes import F32
from .sequence import is_per_frame_argument

__all__ = [
    "AffineTransform",
    "Combine",
    "combine",
    "crop",
    "matmul_f32",
    "rotation",
    "scale",
    "shear",
    "translation",
]

_D2R = F32(math.pi / 180)


def matmul_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in float32, each entry summed in index order (as DALI's ``mat`` product)."""
    out = np.zeros((a.shape[0], b.shape[1]), dtype=F32)
    for k in range(a.shape[1]):
        out = (out + (a[:, k : k + 1] * b[k : k + 1, :]).astype(F32)).astype(F32)
    return out


def _homogeneous(matrix: np.ndarray) -> np.ndarray:
    """``ndim x (ndim + 1)`` -> ``(ndim + 1) x (ndim + 1)`` with the last row ``0 .. 0 1``."""
    n = matrix.shape[0]
    full = np.eye(n + 1, dtype=F32)
    full[:n] = matrix
    return full


def _radians(degrees: float) -> np.float32:
    return F32(F32(degrees) * _D2R)


def _f32_func(func: Any, x: np.float32) -> np.float32:
    """A correctly rounded float32 ``func(x)`` (C's ``cosf``, ``sinf``, ``tanf``)."""
    return F32(func(float(x)))


def _vector(value: Any, what: str, op_name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise PipelineDefinitionError(f"{op_name}: {what} must be numbers, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise PipelineDefinitionError(f"{op_name}: {what} must be finite, got {value!r}")
    return arr.astype(F32)


class AffineTransform(Operator):
    """Base of the transform generators: per-sample arguments -> a homogeneous float32 matrix.

    Subclasses implement ``matrix(args)`` for one sample (``args``: argument
    name -> float32 vector) and say how many dimensions the constant arguments
    imply (``self.ndim``, ``None`` when only an input or per-sample data tells).
    """

    arg_names: tuple[str, ...] = ()

    def __init__(self, constants: dict[str, Any], *, reverse_order: bool, has_input: bool,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.constants = {k: _vector(v, k, self.name) for k, v in constants.items() if v is not None}
        self.reverse_order = bool(reverse_order)
        self.has_input = has_input
        self.ndim: int | None = None
        #: arguments given per frame (fn.per_frame): one matrix per frame
        self.per_frame_args: frozenset[str] = frozenset()

    def matrix(self, args: dict[str, np.ndarray], ndim: int | None) -> np.ndarray:
        """The ``(ndim + 1) x (ndim + 1)`` matrix of one sample."""
        raise NotImplementedError

    def _sample_args(self, chunk: Chunk, row: int) -> dict[str, np.ndarray]:
        args = dict(self.constants)
        for key in self.arg_names:
            if key in self.per_frame_args:
                continue  # set frame by frame (_one)
            value = chunk.arg(key, row, None)
            if value is not None:
                try:
                    args[key] = _vector(value, key, self.name)
                except PipelineDefinitionError as err:
                    raise SampleError(str(err)) from None
        return args

    def _one(self, chunk: Chunk, row: int) -> np.ndarray:
        if not self.per_frame_args:
            return self._one_matrix(chunk, row, None)
        frames = {k: np.asarray(chunk.arg(k, row, None), dtype=np.float64) for k in self.per_frame_args}
        counts = {k: (len(v) if v.ndim else 1) for k, v in frames.items()}
        n = max(counts.values())
        if any(c not in (1, n) for c in counts.values()):  # one frame's value is used for every frame
            raise SampleError(f"{self.name}: the per-frame arguments have different numbers of frames: {counts}")
        return np.stack([self._one_matrix(chunk, row, {k: np.atleast_1d(v)[f if counts[k] > 1 else 0]
                                                       for k, v in frames.items()}) for f in range(n)])

    def _one_matrix(self, chunk: Chunk, row: int, frame_args: dict[str, np.ndarray] | None) -> np.ndarray:
        previous = None
        ndim = self.ndim
        if self.has_input:
            previous = np.asarray(chunk.inputs[0][row])
            if previous.ndim != 2 or previous.shape[1] != previous.shape[0] + 1 or previous.dtype != np.float32:
                raise SampleError(f"{self.name}: the input must be a float32 (ndim, ndim + 1) affine matrix, "
                                  f"got {previous.dtype} {previous.shape}")
            ndim = previous.shape[0]
        args = self._sample_args(chunk, row)
        for key, value in (frame_args or {}).items():
            try:
                args[key] = _vector(value, key, self.name)
            except PipelineDefinitionError as err:
                raise SampleError(str(err)) from None
        try:
            mat = self.matrix(args, ndim)
        except ValueError as err:
            raise SampleError(f"{self.name}: {err}") from None
        n = mat.shape[0] - 1
        if previous is not None:
            if previous.shape[0] != n:
                raise SampleError(f"{self.name}: the input is a {previous.shape[0]}D transform but the arguments "
                                  f"describe a {n}D transform")
            full_in = _homogeneous(previous)
            mat = matmul_f32(full_in, mat) if self.reverse_order else matmul_f32(mat, full_in)
        return np.ascontiguousarray(mat[:n], dtype=F32)

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, _: self._one(chunk, row))]


def _centred(mat: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """Put the transform's fixed point at ``center``: translation ``A @ (-center) + center``."""
    if center is None:
        return mat
    n = mat.shape[0] - 1
    if center.size != n:
        raise ValueError(f"center has {center.size} values but the transform is {n}D")
    neg = (-center).astype(F32)
    t = np.zeros(n, dtype=F32)
    for k in range(n):
        t = (t + (mat[:n, k] * neg[k]).astype(F32)).astype(F32)
    mat = mat.copy()
    mat[:n, n] = (t + center).astype(F32)
    return mat


def _check_ndim(n: int, what: str) -> int:
    if n not in (1, 2, 3, 4, 5, 6):
        raise ValueError(f"{what} implies a {n}D transform; 1 to 6 dimensions are supported")
    return n


class Translation(AffineTransform):
    """``transforms.translation(offset)``."""

    name = "transforms.translation"
    per_sample_args = frozenset({"offset"})
    arg_names = ("offset",)

    def matrix(self, args: dict[str, np.ndarray], ndim: int | None) -> np.ndarray:
        offset = args["offset"]
        n = _check_ndim(offset.size, "offset")
        mat = np.eye(n + 1, dtype=F32)
        mat[:n, n] = offset
        return mat


class Scale(AffineTransform):
    """``transforms.scale(scale, center=None, ndim=None)``."""

    name = "transforms.scale"
    per_sample_args = frozenset({"scale", "center"})
    arg_names = ("scale", "center")

    def __init__(self, constants: dict[str, Any], *, ndim: int | None, **kw: Any) -> None:
        super().__init__(constants, **kw)
        self.fixed_ndim = ndim

    def matrix(self, args: dict[str, np.ndarray], ndim: int | None) -> np.ndarray:
        factors = args["scale"]
        center = args.get("center")
        if factors.size == 1:
            n = self.fixed_ndim or ndim or (center.size if center is not None else None)
            if n is None:
                raise ValueError("a scalar scale needs ndim (or an input transform, or a center) to know the dimensions")
            factors = np.full(n, factors[0], dtype=F32)
        n = _check_ndim(factors.size, "scale")
        mat = np.eye(n + 1, dtype=F32)
        mat[np.arange(n), np.arange(n)] = factors
        return _centred(mat, center)


def _rotation_3d(axis: np.ndarray, angle: np.float32, c: np.float32, s: np.float32) -> np.ndarray:
    """Rotation about the (normalized) ``axis`` (Rodrigues' formula, float32 in DALI's order)."""
    if angle == 0:
        return np.eye(4, dtype=F32)
    sq = F32(F32(F32(axis[0] * axis[0]) + F32(axis[1] * axis[1])) + F32(axis[2] * axis[2]))
    norm = F32(math.sqrt(float(sq)))
    if norm == 0:
        raise ValueError("axis must have a non-zero length")
    u, v, w = (F32(x / norm) for x in axis)
    uu, vv, ww = F32(u * u), F32(v * v), F32(w * w)
    uv, uw, vw = F32(u * v), F32(u * w), F32(v * w)
    one_c = F32(F32(1) - c)
    mat = np.eye(4, dtype=F32)
    mat[0, :3] = [uu + F32(F32(vv + ww) * c), F32(uv * one_c) - F32(w * s), F32(uw * one_c) + F32(v * s)]
    mat[1, :3] = [F32(uv * one_c) + F32(w * s), vv + F32(F32(uu + ww) * c), F32(vw * one_c) - F32(u * s)]
    mat[2, :3] = [F32(uw * one_c) - F32(v * s), F32(vw * one_c) + F32(u * s), ww + F32(F32(uu + vv) * c)]
    return mat


class Rotation(AffineTransform):
    """``transforms.rotation(angle, axis=None, center=None)`` (2D, or 3D about ``axis``)."""

    name = "transforms.rotation"
    per_sample_args = frozenset({"angle", "axis", "center"})
    arg_names = ("angle", "axis", "center")

    def matrix(self, args: dict[str, np.ndarray], ndim: int | None) -> np.ndarray:
        angle = args["angle"]
        if angle.size != 1:
            raise ValueError(f"angle must be one number (degrees), got {angle.size} values")
        a = _radians(float(angle[0]))
        c, s = _f32_func(math.cos, a), _f32_func(math.sin, a)
        axis = args.get("axis")
        if axis is None:
            mat = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=F32)
        else:
            if axis.size != 3:
                raise ValueError(f"axis must have 3 values (x, y, z), got {axis.size}")
            mat = _rotation_3d(axis, a, c, s)
        return _centred(mat, args.get("center"))


class Shear(AffineTransform):
    """``transforms.shear(shear=None, angles=None, center=None)``."""

    name = "transforms.shear"
    per_sample_args = frozenset({"shear", "angles", "center"})
    arg_names = ("shear", "angles", "center")

    def matrix(self, args: dict[str, np.ndarray], ndim: int | None) -> np.ndarray:
        if "angles" in args:
            angles = args["angles"]
            if np.any(np.abs(angles) >= 90):
                raise ValueError(f"shear angles must be in (-90, 90) degrees, got {angles.tolist()}")
            factors = np.array([_f32_func(math.tan, _radians(float(v))) for v in angles], dtype=F32)
        else:
            factors = args["shear"]
        if factors.size == 2:
            mat = np.array([[1, factors[0], 0], [factors[1], 1, 0], [0, 0, 1]], dtype=F32)
        elif factors.size == 6:
            sxy, sxz, syx, syz, szx, szy = factors
            mat = np.array([[1, sxy, sxz, 0], [syx, 1, syz, 0], [szx, szy, 1, 0], [0, 0, 0, 1]], dtype=F32)
        else:
            raise ValueError(f"shear needs 2 values (2D) or 6 values (3D), got {factors.size}")
        return _centred(mat, args.get("center"))


class Crop(AffineTransform):
    """``transforms.crop(from_start, from_end, to_start, to_end, absolute)``."""

    name = "transforms.crop"
    per_sample_args = frozenset({"from_start", "from_end", "to_start", "to_end"})
    arg_names = ("from_start", "from_end", "to_start", "to_end")

    def __init__(self, constants: dict[str, Any], *, absolute: bool, **kw: Any) -> None:
        super().__init__(constants, **kw)
        self.absolute = bool(absolute)

    def matrix(self, args: dict[str, np.ndarray], ndim: int | None) -> np.ndarray:
        defaults = {"from_start": 0.0, "from_end": 1.0, "to_start": 0.0, "to_end": 1.0}
        given = {k: args[k] for k in defaults if k in args}
        n = ndim or max((v.size for v in given.values()), default=1)
        vecs = {}
        for key, default in defaults.items():
            v = given.get(key, np.array([default], dtype=F32))
            if v.size == 1:
                v = np.full(n, v[0], dtype=F32)
            if v.size != n:
                raise ValueError(f"{key} has {v.size} values but the transform is {n}D")
            vecs[key] = v
        fs, fe, ts, te = vecs["from_start"], vecs["from_end"], vecs["to_start"], vecs["to_end"]
        if self.absolute:
            fs, fe = np.minimum(fs, fe), np.maximum(fs, fe)
            ts, te = np.minimum(ts, te), np.maximum(ts, te)
        extent = (fe - fs).astype(F32)
        if np.any(extent == 0):
            raise ValueError(f"from_start and from_end must differ on every axis, got {fs.tolist()} and {fe.tolist()}")
        factors = ((te - ts).astype(F32) / extent).astype(F32)
        mat = np.eye(n + 1, dtype=F32)
        mat[np.arange(n), np.arange(n)] = factors
        mat[:n, n] = (ts - (fs * factors).astype(F32)).astype(F32)
        return mat


class Combine(Operator):
    """``transforms.combine``: the product of two or more input transforms."""

    name = "transforms.combine"

    def __init__(self, *, reverse_order: bool = False, name: str | None = None) -> None:
        super().__init__(name=name)
        self.reverse_order = bool(reverse_order)
        self.per_frame_args: frozenset[str] = frozenset()  # set by fn.transforms.combine: any input per frame

    def _one(self, matrices: Sequence[Any]) -> np.ndarray:
        arrays = [np.asarray(m) for m in matrices]
        frames = {a.shape[0] for a in arrays if a.ndim == 3}
        if frames:  # per-frame matrices (frames, n, n + 1): a single matrix applies to every frame, as in DALI
            if len(frames) != 1:
                raise SampleError(f"transforms.combine: per-frame inputs with different numbers of frames: "
                                  f"{[a.shape for a in arrays]}")
            return np.stack([self._one([a[k] if a.ndim == 3 else a for a in arrays]) for k in range(frames.pop())])
        first = arrays[0]
        for m in arrays:
            if m.ndim != 2 or m.shape[1] != m.shape[0] + 1 or m.dtype != np.float32 or m.shape != first.shape:
                raise SampleError(f"transforms.combine: every input must be a float32 (ndim, ndim + 1) matrix of the "
                                  f"same size, got {[(a.dtype.name, a.shape) for a in arrays]}")
        n = first.shape[0]
        acc = _homogeneous(first)
        for m in arrays[1:]:
            acc = matmul_f32(acc, _homogeneous(m)) if self.reverse_order else matmul_f32(_homogeneous(m), acc)
        return np.ascontiguousarray(acc[:n])

    def run(self, chunk: Chunk) -> list[list[Any]]:
        return [chunk.each_sample(lambda row, _: self._one([inp[row] for inp in chunk.inputs]))]


def _add(op: AffineTransform, data: DataNode | None, per_sample: dict[str, DataNode],
         device: str | Device | None) -> DataNode:
    op.per_frame_args = frozenset(k for k, v in per_sample.items() if is_per_frame_argument(v))
    return add_node(op, [] if data is None else [data], per_sample, device=device)[0]


def is_per_frame(node: DataNode) -> bool:
    """Whether ``node`` holds one value per frame: ``fn.per_frame`` data or per-frame transform matrices."""
    return is_per_frame_argument(node)



@fn_function()
def translation(
    data: DataNode | None = None,
    *,
    offset: Sequence[Number] | Number | DataNode,
    reverse_order: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """A translation matrix by ``offset`` (its length gives the dimensions), after ``data`` if given."""
    constants, per_sample = split_arguments({"offset": offset})
    op = Translation(constants, reverse_order=reverse_order, has_input=data is not None, name=name)
    return _add(op, data, per_sample, device)


@fn_function()
def scale(
    data: DataNode | None = None,
    *,
    scale: Sequence[Number] | Number | DataNode,
    center: Sequence[Number] | DataNode | None = None,
    ndim: int | None = None,
    reverse_order: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """A scaling matrix (factors per axis, or one factor with ``ndim``) about ``center`` (default the origin)."""
    constants, per_sample = split_arguments({"scale": scale, "center": center})
    op = Scale(constants, ndim=ndim, reverse_order=reverse_order, has_input=data is not None, name=name)
    if data is None and ndim is None and np.size(constants.get("scale", [0, 0])) == 1 and center is None:
        raise PipelineDefinitionError("transforms.scale: a scalar scale needs ndim (or an input transform or a center)")
    return _add(op, data, per_sample, device)


@fn_function()
def rotation(
    data: DataNode | None = None,
    *,
    angle: Number | DataNode,
    axis: Sequence[Number] | DataNode | None = None,
    center: Sequence[Number] | DataNode | None = None,
    reverse_order: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """A rotation by ``angle`` degrees (2D; 3D about ``axis`` when given) about ``center``."""
    constants, per_sample = split_arguments({"angle": angle, "axis": axis, "center": center})
    op = Rotation(constants, reverse_order=reverse_order, has_input=data is not None, name=name)
    return _add(op, data, per_sample, device)


@fn_function()
def shear(
    data: DataNode | None = None,
    *,
    shear: Sequence[Number] | DataNode | None = None,
    angles: Sequence[Number] | DataNode | None = None,
    center: Sequence[Number] | DataNode | None = None,
    reverse_order: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """A shear: factors ``shear`` (2 for 2D: x, y; 6 for 3D) or ``angles`` in degrees (factor = tan)."""
    if (shear is None) == (angles is None):
        raise PipelineDefinitionError("transforms.shear: give exactly one of shear and angles")
    constants, per_sample = split_arguments({"shear": shear, "angles": angles, "center": center})
    op = Shear(constants, reverse_order=reverse_order, has_input=data is not None, name=name)
    return _add(op, data, per_sample, device)


@fn_function()
def crop(
    data: DataNode | None = None,
    *,
    from_start: Sequence[Number] | Number | DataNode = (0.0,),
    from_end: Sequence[Number] | Number | DataNode = (1.0,),
    to_start: Sequence[Number] | Number | DataNode = (0.0,),
    to_end: Sequence[Number] | Number | DataNode = (1.0,),
    absolute: bool = False,
    reverse_order: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """The map of the box ``[from_start, from_end]`` onto ``[to_start, to_end]`` (e.g. after a crop)."""
    args = {"from_start": from_start, "from_end": from_end, "to_start": to_start, "to_end": to_end}
    constants, per_sample = split_arguments(args)
    op = Crop(constants, absolute=absolute, reverse_order=reverse_order, has_input=data is not None, name=name)
    return _add(op, data, per_sample, device)


@fn_function()
def combine(
    *inputs: DataNode,
    reverse_order: bool = False,
    device: str | Device | None = None,
    name: str | None = None,
) -> DataNode:
    """Combine two or more transforms: ``[T1, T2, T3]`` applies T1, then T2, then T3."""
    if len(inputs) < 2:
        raise PipelineDefinitionError(f"transforms.combine: needs at least 2 input transforms, got {len(inputs)}")
    op = Combine(reverse_order=reverse_order, name=name)
    # per-frame inputs give per-frame products (what is_per_frame tells warp_affine / coord_transform)
    op.per_frame_args = frozenset({"inputs"}) if any(is_per_frame(i) for i in inputs) else frozenset()
    return add_node(op, list(inputs), device=device)[0]
