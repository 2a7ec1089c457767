"""BSDS500 subset: colour images with all their human segmentations (from `data_dir()`)."""

from __future__ import annotations

import numpy as np

from ._paths import DataNotFoundError, data_dir, data_file

__all__ = ["bsds_ids", "load_bsds"]


def bsds_ids():
    """Sorted ids (strings) of the BSDS500 images present in ``data_dir()/bsds500/images``.

    Examples
    --------
    >>> from graphclust.datasets import bsds_ids
    >>> ids = bsds_ids()  # doctest: +SKIP
    >>> len(ids)  # doctest: +SKIP
    20
    """
    folder = data_dir() / "bsds500" / "images"
    if not folder.is_dir():
        raise DataNotFoundError(f"BSDS500 image folder {folder} does not exist.")
    return sorted(p.stem for p in folder.glob("*.jpg"))


def load_bsds(image_id):
    """One BSDS500 image and its human segmentations.

    Parameters
    ----------
    image_id : str or int
        E.g. "12003" (see `bsds_ids`).

    Returns
    -------
    image : uint8 array (H, W, 3)
    segmentations : list of int64 arrays (H, W)
        One label image per human annotator (labels 1..n_segments as in the files).

    Raises
    ------
    DataNotFoundError
        The data folder or this image's files are missing.
    ValueError
        An annotation does not match the image's shape.

    Examples
    --------
    >>> from graphclust.datasets import load_bsds
    >>> image, humans = load_bsds("12003")  # doctest: +SKIP
    >>> image.shape, len(humans)  # doctest: +SKIP
    ((321, 481, 3), 5)
    """
    import scipy.io as sio

    from ..io import read_image

    image_id = str(image_id)
    img_path = data_file("bsds500", "images", f"{image_id}.jpg")
    gt_path = data_file("bsds500", "groundTruth", f"{image_id}.mat")
    image = read_image(img_path)
    cell = sio.loadmat(str(gt_path))["groundTruth"]
    segs = []
    for k in range(cell.shape[1]):
        seg = np.asarray(cell[0, k]["Segmentation"][0, 0], dtype=np.int64)
        if seg.shape != image.shape[:2]:
            raise ValueError(
                f"BSDS500 {image_id}: annotation {k} has shape {seg.shape}, image {image.shape[:2]}."
            )
        segs.append(seg)
    return image, segs
