"""Build a realistic, ImageNet-like JPEG set from the real photos in tests/data/photos.

Each image is a random crop of one of the photos (aspect ratio between 3:4 and
4:3, like ImageNet), rescaled to 400-640 px wide and saved by Pillow at JPEG
quality 75-95 (4:2:0 chroma subsampling, Pillow's default), as
``out_dir/class_k/img_XXXX.jpg`` so that ``fn.readers.file(file_root=out_dir)``
and an ImageFolder-style dataset both see ``classes`` labelled folders.

The set is cached: a ``manifest.json`` in ``out_dir`` records the parameters
and the files, and a later call with the same parameters reuses the files.

Run it alone to build (or check) the default set::

    python benchmarks/_dataset.py --images 512
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

REPO_ROOT: Path = Path(__file__).resolve().parent.parent
PHOTOS_DIR: Path = REPO_ROOT / "tests" / "data" / "photos"
DEFAULT_DATA_ROOT: Path = REPO_ROOT / ".bench-data"
MANIFEST_NAME = "manifest.json"
#: Bump when the generation algorithm changes, so old caches are rebuilt.
GENERATOR_VERSION = 1
_MIN_ASPECT, _MAX_ASPECT = 3 / 4, 4 / 3  # width / height
_MIN_AREA_FRACTION = 0.3  # smallest crop, as a fraction of the photo's area


@dataclass(frozen=True)
class JpegSetParams:
    """The parameters that define a JPEG set (what the cache manifest compares)."""

    n: int
    seed: int
    min_width: int
    max_width: int
    quality: tuple[int, int]
    classes: int
    sources: tuple[str, ...]
    version: int = GENERATOR_VERSION

    def to_json(self) -> dict[str, Any]:
        """JSON-friendly dict (tuples become lists)."""
        d = asdict(self)
        d["quality"] = list(self.quality)
        d["sources"] = list(self.sources)
        return d


def default_out_dir(n: int = 512, seed: int = 0) -> Path:
    """``<repo>/.bench-data/jpegs-n<n>-seed<seed>`` (git-ignored)."""
    return DEFAULT_DATA_ROOT / f"jpegs-n{n}-seed{seed}"


def source_photos(photos_dir: Path = PHOTOS_DIR) -> list[Path]:
    """The real photos the set is cut from, sorted by name."""
    exts = {".png", ".jpg", ".jpeg"}
    photos = sorted(p for p in photos_dir.iterdir() if p.suffix.lower() in exts)
    if not photos:
        raise FileNotFoundError(
            f"no photos found in {photos_dir}; expected the PNG/JPEG files that "
            "tests/data/README.md lists (is the checkout complete?)"
        )
    return photos


def _validate(n: int, min_width: int, max_width: int, quality: tuple[int, int],
              classes: int) -> None:
    """Reject parameters that cannot produce a set, saying what is expected."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if classes < 1:
        raise ValueError(f"classes must be >= 1, got {classes}")
    if not 16 <= min_width <= max_width:
        raise ValueError(f"need 16 <= min_width <= max_width, got {min_width}, {max_width}")
    lo, hi = quality
    if not 1 <= lo <= hi <= 100:
        raise ValueError(f"quality must be (lo, hi) with 1 <= lo <= hi <= 100, got {quality}")


def _read_manifest(out_dir: Path) -> dict[str, Any] | None:
    """The manifest in ``out_dir``, or None when absent or unreadable."""
    try:
        data = json.loads((out_dir / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _cached_files(out_dir: Path, params: JpegSetParams) -> list[Path] | None:
    """The cached file list if the manifest matches ``params`` and all files exist."""
    manifest = _read_manifest(out_dir)
    if manifest is None or manifest.get("params") != params.to_json():
        return None
    files = [out_dir / rel for rel in manifest.get("files", [])]
    if len(files) != params.n or not all(f.is_file() for f in files):
        return None
    return files


def _clear(out_dir: Path) -> None:
    """Remove what an earlier build wrote (class folders and manifest), nothing else."""
    (out_dir / MANIFEST_NAME).unlink(missing_ok=True)
    for d in out_dir.glob("class_*"):
        if d.is_dir():
            shutil.rmtree(d)


def _random_crop(img: Image.Image, rng: random.Random) -> Image.Image:
    """A crop of ``img`` with aspect in [3:4, 4:3] and 30-100 % of its area."""
    w, h = img.size
    aspect = math.exp(rng.uniform(math.log(_MIN_ASPECT), math.log(_MAX_ASPECT)))
    area = rng.uniform(_MIN_AREA_FRACTION, 1.0) * w * h
    cw, ch = math.sqrt(area * aspect), math.sqrt(area / aspect)
    shrink = min(1.0, w / cw, h / ch)  # keep the aspect, fit inside the photo
    cw, ch = max(1, int(cw * shrink)), max(1, int(ch * shrink))
    x0, y0 = rng.randint(0, w - cw), rng.randint(0, h - ch)
    return img.crop((x0, y0, x0 + cw, y0 + ch))


def _make_one(photo: Image.Image, rng: random.Random, min_width: int,
              max_width: int) -> Image.Image:
    """Crop ``photo`` at random and rescale it to a random width in range."""
    from PIL import Image

    crop = _random_crop(photo, rng)
    width = rng.randint(min_width, max_width)
    height = max(1, round(width * crop.height / crop.width))
    return crop.resize((width, height), Image.Resampling.BICUBIC)


def build_jpeg_set(
    out_dir: Path | str | None = None,
    n: int = 512,
    seed: int = 0,
    min_width: int = 400,
    max_width: int = 640,
    quality: tuple[int, int] = (75, 95),
    classes: int = 4,
) -> list[Path]:
    """Build (or reuse) ``n`` JPEGs cut from the real photos in tests/data/photos.

    Args:
        out_dir: folder for ``class_k/img_XXXX.jpg`` and ``manifest.json``;
            default ``<repo>/.bench-data/jpegs-n<n>-seed<seed>``.
        n: number of images.
        seed: seed of the crops, sizes and qualities (same seed, same files).
        min_width: smallest image width [px].
        max_width: largest image width [px].
        quality: JPEG quality range (inclusive), drawn per image.
        classes: number of class folders; image i goes to ``class_{i % classes}``.

    Returns:
        The image paths, in index order.
    """
    from PIL import Image

    _validate(n, min_width, max_width, quality, classes)
    out = Path(out_dir) if out_dir is not None else default_out_dir(n, seed)
    photos = source_photos()
    params = JpegSetParams(n, seed, min_width, max_width, (quality[0], quality[1]), classes,
                           tuple(p.name for p in photos))
    cached = _cached_files(out, params)
    if cached is not None:
        return cached

    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    # ImageNet is (almost all) 3-channel JPEG; the grayscale scan becomes RGB too.
    sources = [Image.open(p).convert("RGB") for p in photos]
    rng = random.Random(seed)
    files: list[Path] = []
    for i in range(n):
        img = _make_one(rng.choice(sources), rng, min_width, max_width)
        path = out / f"class_{i % classes}" / f"img_{i:04d}.jpg"
        path.parent.mkdir(exist_ok=True)
        img.save(path, format="JPEG", quality=rng.randint(*quality))
        files.append(path)
    manifest = {"params": params.to_json(), "files": [str(f.relative_to(out)) for f in files]}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
    return files


def main(argv: list[str] | None = None) -> None:
    """Build the set from the command line and print where it is."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    files = build_jpeg_set(args.out, n=args.images, seed=args.seed)
    total = sum(f.stat().st_size for f in files)
    print(f"{len(files)} JPEGs, {total / 2**20:.1f} MiB, in {files[0].parent.parent}")


if __name__ == "__main__":
    main()
