"""Make the derived clips of this folder from the two CMU ARCTIC recordings (modifications, see README).

Run from the repository root with soundfile and soxr installed:
``python tests/data/audio/make_derived.py``. The outputs are committed; this
script documents how they were made.
"""

from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

HERE = Path(__file__).parent


def main() -> None:
    a7, rate = sf.read(HERE / "arctic_a0007.wav", dtype="float32")
    a9, _ = sf.read(HERE / "arctic_a0009.wav", dtype="float32")
    # Stereo FLAC at 22050 Hz: left = a0009, right = a0007 at half gain, first 2.5 s.
    n = int(2.5 * rate)
    left, right = np.zeros(n, np.float32), np.zeros(n, np.float32)
    left[: min(n, len(a9))] = a9[:n]
    right[: min(n, len(a7))] = 0.5 * a7[:n]
    stereo = soxr.resample(np.stack([left, right], axis=1), rate, 22050)
    sf.write(HERE / "arctic_stereo_22k.flac", stereo, 22050, subtype="PCM_16")
    # Lossy encodings of a0007 (16 kHz mono).
    sf.write(HERE / "arctic_a0007.ogg", a7, rate, format="OGG", subtype="VORBIS")
    sf.write(HERE / "arctic_a0007.opus", a7, rate, format="OGG", subtype="OPUS")
    # Broken files: a FLAC cut in the middle, a WAV header over noise, text named .wav.
    flac = (HERE / "arctic_stereo_22k.flac").read_bytes()
    (HERE / "broken" / "truncated.flac").write_bytes(flac[: 4096])
    wav = (HERE / "arctic_a0009.wav").read_bytes()
    (HERE / "broken" / "junk_body.wav").write_bytes(wav[:12] + bytes(range(256)) * 8)
    (HERE / "broken" / "not_audio.wav").write_bytes(b"this is not a wave file\n" * 10)


if __name__ == "__main__":
    main()
