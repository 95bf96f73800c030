"""The building blocks of automatic augmentation: ``Augmentation``, ``@augmentation``, ``signed_bin``, ``select``, ``Policy``.

The same contract as DALI's ``nvidia.dali.auto_aug.core``:

* An augmentation is a function ``op(data, parameter, **extra)`` wrapped
  with its magnitude range. Called with ``magnitude_bin`` (an int, or
  per-sample data) and ``num_magnitude_bins``, it computes the parameter as
  ``mag_to_param(magnitudes[bin] * (-1) ** random_sign)`` with
  ``magnitudes = linspace(mag_range[0], mag_range[1], num_magnitude_bins)``
  (float32), every parameter precomputed once per bin (and sign) into a table
  that the per-sample bin indexes. Extra keyword arguments are passed to
  ``op`` when its signature names them (``fill_value``, ``interp_type``,
  ``shape``); a missing required one is an error naming it.
* ``signed_bin(bin)`` draws the random sign once (before a per-sample choice
  of operation) so every operation of the choice sees the same sign.
* ``select(augmentations, op_index, data, ...)`` applies, per sample,
  ``augmentations[op_index]``: an ``if`` on pipeline data splitting the batch
  in halves (``streamflow.ops.conditional``), so each sample runs only its own
  operation. It works with and without ``enable_conditionals=True``.
* ``Policy``: AutoAugment's sub-policies, validated as DALI validates them.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import PipelineDefinitionError
from ..graph import DataNode
from ..ops import conditional
from ..ops.constant import constant_node
from ..ops.random import uniform

__all__ = [
    "Augmentation", "Policy", "SignedBin", "augmentation", "select", "signed_bin", "suite_kwargs", "without",
]

_UNSET: Any = object()
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _params_after(op: Callable[..., Any], skip: int) -> list[inspect.Parameter]:
    """The parameters of ``op`` after its first ``skip`` positional ones."""
    out = []
    for i, p in enumerate(inspect.signature(op).parameters.values()):
        if i < skip and p.kind in _POSITIONAL:
            continue
        out.append(p)
    return out


def accepted_kwargs(op: Callable[..., Any], kwargs: dict[str, Any], skip: int = 2) -> dict[str, Any]:
    """The entries of ``kwargs`` that ``op`` names (after the data and the parameter)."""
    names = {p.name for p in _params_after(op, skip) if p.kind in (*_POSITIONAL, inspect.Parameter.KEYWORD_ONLY)}
    return {k: v for k, v in kwargs.items() if k in names}


def missing_kwargs(op: Callable[..., Any], kwargs: dict[str, Any], skip: int = 2) -> list[str]:
    """The required (no default) keyword parameters of ``op`` absent from ``kwargs``."""
    return [p.name for p in _params_after(op, skip)
            if p.default is inspect.Parameter.empty and p.kind in (*_POSITIONAL, inspect.Parameter.KEYWORD_ONLY)
            and p.name not in kwargs]


class MissingArgError(PipelineDefinitionError):
    """An augmentation needs a keyword argument the call did not give."""

    def __init__(self, message: str, augmentation: Augmentation, missing: list[str]) -> None:
        super().__init__(message)
        self.augmentation = augmentation
        self.missing_args = missing


class SignedBin:
    """A magnitude bin with its random sign: ``signed_index = 2 * bin + sign`` (both per sample).

    Indexing (``signed[i]``) takes the i-th entry when several bins are drawn
    per sample (RandAugment's ``n`` operations, AutoAugment's stages).
    """

    def __init__(self, magnitude_bin: int | DataNode, random_sign: DataNode, signed_index: DataNode) -> None:
        self.bin = magnitude_bin
        self.random_sign = random_sign
        self.signed_index = signed_index

    def __getitem__(self, i: int) -> SignedBin:
        bin_i = self.bin if isinstance(self.bin, int) else self.bin[i]
        return SignedBin(bin_i, self.random_sign[i], self.signed_index[i])


def signed_bin(magnitude_bin: int | DataNode, random_sign: DataNode | None = None, seed: int | None = None,
               shape: int | Sequence[int] | None = None) -> SignedBin:
    """``magnitude_bin`` combined with a random sign (0: keep, 1: negate), drawn here unless given.

    Args:
        magnitude_bin: an int in ``[0, num_magnitude_bins)`` or per-sample ints.
        random_sign: per-sample 0/1 (default: drawn uniformly).
        seed: seed of the sign's random stream.
        shape: draw several signs per sample (one per operation applied).
    """
    if isinstance(magnitude_bin, (bool, np.bool_)) or not isinstance(magnitude_bin, (int, np.integer, DataNode)):
        raise PipelineDefinitionError(
            f"signed_bin: magnitude_bin must be an int or per-sample data (a DataNode), got {magnitude_bin!r}")
    if random_sign is not None and (seed is not None or shape is not None):
        raise PipelineDefinitionError("signed_bin: random_sign cannot be given with seed or shape")
    if random_sign is None:
        random_sign = uniform(values=[0, 1], dtype="int32", seed=seed, shape=shape)
    bin_value = int(magnitude_bin) if isinstance(magnitude_bin, (int, np.integer)) else magnitude_bin
    return SignedBin(bin_value, random_sign, 2 * bin_value + random_sign)


class Augmentation:
    """A transformation with its magnitude range (use the ``@augmentation`` decorator to make one).

    Args:
        op: ``op(data, parameter, **extra) -> DataNode``.
        mag_range: ``(low, high)`` of the magnitudes (spread over the bins with
            float32 ``linspace``), or an array of the magnitudes themselves;
            ``None``: the operation takes no parameter (it gets ``None``).
        randomly_negate: negate the magnitude for a random half of the samples.
        mag_to_param: magnitude -> parameter (numbers or an array; one shape
            and type for all magnitudes); default: the magnitude.
        param_device: accepted for DALI compatibility; parameters are per-sample
            CPU data here, which every operator takes.
        name: default ``op.__name__``.
    """

    def __init__(self, op: Callable[..., Any], mag_range: tuple[float, float] | np.ndarray | None = None,
                 randomly_negate: bool | None = None, mag_to_param: Callable[[float], Any] | None = None,
                 param_device: str | None = None, name: str | None = None) -> None:
        if not callable(op):
            raise PipelineDefinitionError(f"@augmentation needs a function, got {op!r}")
        positional = [p for p in inspect.signature(op).parameters.values() if p.kind in _POSITIONAL]
        if len(positional) < 2:
            raise PipelineDefinitionError(
                f"{op!r} takes {len(positional)} positional argument(s); an augmentation takes at least two: "
                "the samples and the parameter")
        self.op = op
        self.mag_range = mag_range
        self.randomly_negate = bool(randomly_negate)
        self._mag_to_param = mag_to_param
        self.param_device = param_device or "cpu"
        self.name = name or op.__name__
        self._config = {"mag_range": mag_range, "randomly_negate": randomly_negate, "mag_to_param": mag_to_param,
                        "param_device": param_device, "name": name}

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self._config.items() if v is not None]
        return f"Augmentation({', '.join([repr(self.op), *shown])})"

    @property
    def mag_to_param(self) -> Callable[[float], Any]:
        return self._mag_to_param or np.array

    def augmentation(self, mag_range: Any = _UNSET, randomly_negate: Any = _UNSET, mag_to_param: Any = _UNSET,
                     param_device: Any = _UNSET, name: Any = _UNSET) -> Augmentation:
        """A copy of this augmentation with the given settings changed (the others kept)."""
        config = dict(self._config)
        for key, value in (("mag_range", mag_range), ("randomly_negate", randomly_negate),
                           ("mag_to_param", mag_to_param), ("param_device", param_device), ("name", name)):
            if value is not _UNSET:
                config[key] = value
        return type(self)(self.op, **config)  # type: ignore[arg-type]

    # --- magnitudes and parameters (computed once, as numpy tables) -------------------------
    def magnitudes(self, num_magnitude_bins: int | None) -> np.ndarray | None:
        """The magnitude of each bin (float32), or None when the augmentation takes no magnitude."""
        if self.mag_range is None:
            return None
        if isinstance(self.mag_range, np.ndarray):
            if num_magnitude_bins is not None and len(self.mag_range) != num_magnitude_bins:
                raise PipelineDefinitionError(
                    f"augmentation {self.name!r} has {len(self.mag_range)} explicit magnitudes, but "
                    f"num_magnitude_bins is {num_magnitude_bins}")
            return self.mag_range
        if num_magnitude_bins is None:
            raise PipelineDefinitionError(f"augmentation {self.name!r}: give num_magnitude_bins with the magnitude bin")
        if not hasattr(self.mag_range, "__len__") or len(self.mag_range) != 2:
            raise PipelineDefinitionError(
                f"augmentation {self.name!r}: mag_range must be (low, high) or an array of magnitudes, "
                f"got {self.mag_range!r}")
        lo, hi = self.mag_range
        return np.linspace(lo, hi, num_magnitude_bins, dtype=np.float32)

    def param(self, magnitude: Any) -> np.ndarray:
        """``mag_to_param(magnitude)`` as an array."""
        value = self.mag_to_param(magnitude)
        if isinstance(value, DataNode) or (isinstance(value, (list, tuple)) and any(isinstance(v, DataNode) for v in value)):
            raise PipelineDefinitionError(
                f"mag_to_param of augmentation {self.name!r} returned pipeline data; it must return numbers "
                "or arrays, so the parameters can be computed once for all samples")
        return np.array(value)

    def param_table(self, magnitudes: Sequence[Any]) -> np.ndarray:
        """The parameters of ``magnitudes``, stacked (one row per magnitude)."""
        params = [self.param(m) for m in magnitudes]
        for p, m in zip(params[1:], magnitudes[1:]):
            if p.shape != params[0].shape or p.dtype != params[0].dtype:
                raise PipelineDefinitionError(
                    f"mag_to_param of augmentation {self.name!r} gives {params[0].shape} {params[0].dtype} for "
                    f"magnitude {magnitudes[0]} but {p.shape} {p.dtype} for {m}; every magnitude must give the "
                    "same shape and type")
        return np.stack(params)

    def signed_param_table(self, magnitudes: Sequence[Any]) -> np.ndarray:
        """Parameters of ``m0, -m0, m1, -m1, ...`` (row ``2 * bin + sign``)."""
        signed = [v for m in magnitudes for v in (m, -m)]
        return self.param_table(signed)

    def parameter(self, magnitude_bin: int | DataNode | SignedBin | None, num_magnitude_bins: int | None) -> Any:
        """The operation's parameter: a constant, or per-sample data indexing the parameter table."""
        magnitudes = self.magnitudes(num_magnitude_bins)
        if magnitudes is None:
            return None
        if magnitude_bin is None:
            raise PipelineDefinitionError(
                f"augmentation {self.name!r} has a magnitude range, so it needs magnitude_bin")
        if self.randomly_negate and not isinstance(magnitude_bin, SignedBin):
            warnings.warn(
                f"augmentation {self.name!r} negates its magnitude at random but got an unsigned magnitude_bin; "
                "the sign is drawn here. Pass signed_bin(magnitude_bin) (drawn once, before a per-sample "
                "choice of operation) to share it between the operations", stacklevel=3)
            magnitude_bin = signed_bin(magnitude_bin)
        if self.randomly_negate:
            assert isinstance(magnitude_bin, SignedBin)
            if isinstance(magnitude_bin.bin, (int, np.integer)):
                table = self.signed_param_table([magnitudes[int(magnitude_bin.bin)]])
                return constant_node(table)[magnitude_bin.random_sign]
            return constant_node(self.signed_param_table(list(magnitudes)))[magnitude_bin.signed_index]
        index = magnitude_bin.bin if isinstance(magnitude_bin, SignedBin) else magnitude_bin
        if isinstance(index, (int, np.integer)):
            return self.param(magnitudes[int(index)])
        return constant_node(self.param_table(list(magnitudes)))[index]

    def __call__(self, data: DataNode, *, magnitude_bin: int | DataNode | SignedBin | None = None,
                 num_magnitude_bins: int | None = None, **kwargs: Any) -> DataNode:
        """Apply the operation to ``data`` with the parameter of ``magnitude_bin`` (see the module docstring)."""
        parameter = self.parameter(magnitude_bin, num_magnitude_bins)
        missing = missing_kwargs(self.op, kwargs)
        if missing:
            raise MissingArgError(
                f"augmentation {self.name!r} needs the argument(s) {', '.join(missing)}, which the call did not "
                "give", self, missing)
        return self.op(data, parameter, **accepted_kwargs(self.op, kwargs))


def augmentation(function: Callable[..., Any] | None = None, *, mag_range: Any = None, randomly_negate: bool | None = None,
                 mag_to_param: Callable[[float], Any] | None = None, param_device: str | None = None,
                 name: str | None = None) -> Any:
    """Turn ``function(data, parameter, **extra)`` into an ``Augmentation`` (see the class for the arguments).

    Usable bare (``@augmentation``) or with settings (``@augmentation(mag_range=(0, 30))``).
    """

    def wrap(f: Callable[..., Any]) -> Augmentation:
        if isinstance(f, Augmentation):
            raise PipelineDefinitionError(
                f"{f.name!r} is already an augmentation: use its .augmentation(...) method to change its settings")
        return Augmentation(f, mag_range=mag_range, randomly_negate=randomly_negate, mag_to_param=mag_to_param,
                            param_device=param_device, name=name)

    return wrap if function is None else wrap(function)


def forbid_unused_kwargs(augmentations: Sequence[Augmentation], kwargs: dict[str, Any], where: str) -> None:
    """A keyword argument that no augmentation takes is an error (a typo, most likely)."""
    used = {k for aug in augmentations for k in accepted_kwargs(aug.op, kwargs)}
    unused = [k for k in kwargs if k not in used]
    if unused:
        raise PipelineDefinitionError(
            f"{where}: the argument(s) {', '.join(unused)} are used by none of the augmentations")


def suite_kwargs(shape: Any, fill_value: Any, interp_type: Any) -> dict[str, Any]:
    """The keyword arguments of the suites' warps: ``fill_value``, ``interp_type`` and, when given, ``shape``."""
    kwargs: dict[str, Any] = {"fill_value": fill_value, "interp_type": interp_type}
    if shape is not None:
        kwargs["shape"] = shape
    return kwargs


def without(suite: Sequence[Augmentation], excluded: Sequence[str] | None, where: str) -> list[Augmentation]:
    """``suite`` less the operations named in ``excluded``; a name not in the suite is an error."""
    names = [x.name for x in suite]
    for name in excluded or []:
        if name not in names:
            raise PipelineDefinitionError(
                f"{where}: excluded {name!r} is not in the suite; its operations are {', '.join(names)}")
    return [x for x in suite if x.name not in set(excluded or [])]


def select(augmentations: Sequence[Augmentation], op_index: DataNode, *args: Any, **kwargs: Any) -> DataNode:
    """Per sample, ``augmentations[op_index](*args, **kwargs)``; each sample runs only its own operation.

    ``op_index`` holds one int per sample in ``[0, len(augmentations))``. The
    batch is split in halves by ``op_index <= middle`` until one operation
    remains (conditionals on pipeline data, as DALI's ``select`` does).
    """
    if not augmentations:
        raise PipelineDefinitionError("select: the list of augmentations is empty")

    def split(lo: int, hi: int) -> DataNode:
        if lo == hi:
            return augmentations[lo](*args, **kwargs)
        mid = (lo + hi) // 2
        return conditional.if_exp(op_index <= mid, lambda: split(lo, mid), lambda: split(mid + 1, hi),
                                  f"auto_aug.select({[a.name for a in augmentations[lo:hi + 1]]})")

    return split(0, len(augmentations) - 1)


def pretty_select(augmentations: Sequence[Augmentation], op_index: DataNode, kwargs: dict[str, Any],
                  where: str, suite: str) -> DataNode:
    """``select`` with a helpful message when a translation needs the image ``shape``."""
    try:
        return select(augmentations, op_index, **kwargs)
    except MissingArgError as err:
        if err.missing_args != ["shape"]:
            raise
        raise PipelineDefinitionError(
            f"augmentation {err.augmentation.name!r} needs the image shape (HWC): pass shape= to {where} (for "
            f"example images.shape(), or fn.peek_image_shape of the encoded images), or use the translations "
            f"bounded in pixels ({suite} with use_shape=False)") from None


class Policy:
    """AutoAugment sub-policies: per sample one sub-policy, then each of its steps with its probability.

    Args:
        name: for display.
        num_magnitude_bins: how many bins the magnitude ranges are divided into.
        sub_policies: sequences of ``(augmentation, probability, magnitude_bin)``;
            ``magnitude_bin`` is None for augmentations without a magnitude.
    """

    def __init__(self, name: str, num_magnitude_bins: int,
                 sub_policies: Sequence[Sequence[tuple[Augmentation, float, int | None]]]) -> None:
        if not isinstance(num_magnitude_bins, int) or num_magnitude_bins < 1:
            raise PipelineDefinitionError(f"Policy: num_magnitude_bins must be a positive integer, got {num_magnitude_bins!r}")
        if not isinstance(sub_policies, (list, tuple)):
            raise PipelineDefinitionError(f"Policy: sub_policies must be a list of sub-policies, got {type(sub_policies)}")
        for sub in sub_policies:
            if not isinstance(sub, (list, tuple)):
                raise PipelineDefinitionError(f"Policy: each sub-policy must be a list or tuple, got {sub!r}")
            for step in sub:
                self._check_step(name, num_magnitude_bins, step)
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        self.sub_policies = _unique_names(sub_policies)

    @staticmethod
    def _check_step(name: str, bins: int, step: Any) -> None:
        if not isinstance(step, (list, tuple)) or len(step) != 3:
            raise PipelineDefinitionError(
                f"Policy {name!r}: each step is (augmentation, probability, magnitude_bin), got {step!r}")
        aug, p, mag = step
        if not isinstance(aug, Augmentation):
            raise PipelineDefinitionError(
                f"Policy {name!r}: {aug!r} is not an Augmentation (did you forget @augmentation?)")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise PipelineDefinitionError(f"Policy {name!r}: probability of {aug.name!r} must be in [0, 1], got {p!r}")
        if p == 0:
            warnings.warn(f"Policy {name!r}: augmentation {aug.name!r} has probability 0 in a sub-policy", stacklevel=4)
        if mag is None:
            if aug.mag_range is not None:
                raise PipelineDefinitionError(
                    f"Policy {name!r}: augmentation {aug.name!r} has a magnitude range, so it needs a magnitude bin")
            return
        if aug.mag_range is None:
            warnings.warn(f"Policy {name!r}: the magnitude bin {mag} of {aug.name!r} is ignored (it takes no "
                          "magnitude); give None instead", stacklevel=4)
        if isinstance(mag, bool) or not isinstance(mag, int) or not 0 <= mag < bins:
            raise PipelineDefinitionError(
                f"Policy {name!r}: magnitude bin of {aug.name!r} must be an integer in [0, {bins - 1}], got {mag!r}")

    @property
    def augmentations(self) -> dict[str, Augmentation]:
        """The distinct augmentations of the policy, by name (sorted)."""
        augs = {id(a): a for sub in self.sub_policies for a, _, _ in sub}
        return {a.name: a for a in sorted(augs.values(), key=lambda a: a.name)}

    def __repr__(self) -> str:
        subs = ",\n\t".join(repr([(a.name, p, m) for a, p, m in sub]) for sub in self.sub_policies)
        return f"Policy(name={self.name!r}, num_magnitude_bins={self.num_magnitude_bins}, sub_policies=[\n\t{subs}])"


def _unique_names(sub_policies: Sequence[Sequence[tuple[Augmentation, float, int | None]]]
                  ) -> tuple[tuple[tuple[Augmentation, float, int | None], ...], ...]:
    """Distinct augmentations sharing a name are renamed ``<i>__<name>`` (as DALI does)."""
    seen: dict[int, Augmentation] = {}
    for sub in sub_policies:
        for aug, _, _ in sub:
            seen.setdefault(id(aug), aug)
    if len({a.name for a in seen.values()}) == len(seen):
        return tuple(tuple(sub) for sub in sub_policies)
    digits = len(str(len(seen) - 1))
    renamed = {key: aug.augmentation(name=f"{str(i).zfill(digits)}__{aug.name}") for i, (key, aug) in enumerate(seen.items())}
    return tuple(tuple((renamed[id(a)], p, m) for a, p, m in sub) for sub in sub_policies)
