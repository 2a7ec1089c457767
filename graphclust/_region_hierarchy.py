"""The levels of an image's region hierarchy (`graphclust.segmentation.image_hierarchy`).

`SegmentationHierarchy` holds the superpixels of an image and their Mumford-Shah merge tree, and
cuts it into full-resolution label images: at a number of segments, a height or a scale, with
the thin regions of a cut judged by their colour alone (`graphclust.cluster.absorb_thin_regions`).
"""

from __future__ import annotations

import numpy as np

from ._validation import check_real
from .cluster import absorb_thin_regions, relabel_by_first_appearance

__all__ = ["SegmentationHierarchy", "relabel_by_first_appearance"]


class SegmentationHierarchy:
    """Nested segmentations of one image: superpixels (leaves) and their merge tree.

    Attributes
    ----------
    superpixels : int64 array (H, W)
        The finest level, leaves 0..n_leaves-1, at full resolution.
    tree : graphclust.cluster.Hierarchy
        Merges, non-decreasing heights (Mumford-Shah lambda at the working size) and sizes.
    scale_factor : float
        f = sqrt(h w / REFERENCE_PIXELS) of the grid the tree was built on.
    default_threshold : float or None
        The height of the default level: ``HIERARCHY_DEFAULTS["scale"] * sqrt(f)`` (None unless
        the criterion is "mumford-shah").
    leaves : tuple or None
        ``(size, colour, a, b, length, width)`` at the working size: the superpixels' pixels and
        Lab sums, their adjacent pairs and border lengths, and the texture window's diameter.
        The thin regions of a cut are judged by these (`labels`); None: no such judgement.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.segmentation import image_hierarchy
    >>> img = np.zeros((60, 80, 3)); img[:, 40:] = [0.9, 0.2, 0.1]
    >>> h = image_hierarchy(img)
    >>> two = h.labels(2)
    >>> np.unique(two[:, :40]).tolist(), np.unique(two[:, 40:]).tolist()
    ([0], [1])
    >>> bool((h.ucm()[:, 39] == h.heights[-1]).all())   # the last merge joins the halves
    True
    """

    def __init__(self, superpixels, tree, scale_factor, default_threshold, leaves=None):
        self.superpixels = superpixels
        self.tree = tree
        self.scale_factor = float(scale_factor)
        self.default_threshold = default_threshold
        self.leaves = leaves

    @property
    def n_leaves(self):
        """Number of superpixels."""
        return self.tree.n_leaves

    @property
    def heights(self):
        """Merge heights (non-decreasing)."""
        return self.tree.heights

    def threshold_of(self, scale):
        """The tree height of Mumford-Shah scale `scale` (given for a 481 x 321 image)."""
        scale = check_real(scale, "scale", low=0.0, low_inclusive=False)
        return scale * np.sqrt(self.scale_factor)

    def labels(self, n_segments=None, *, threshold=None, scale=None, absorb_thin=None):
        """Full-resolution labels (H, W) of one level: `n_segments` regions, the cut at tree
        height `threshold`, or at Mumford-Shah `scale`; none given: the default level.
        Numbered 0..K-1 by first appearance in row-major order. `absorb_thin` (default: True
        unless `n_segments` is given) merges the cut's regions thinner than the texture
        window by their colour alone (`graphclust.cluster.absorb_thin_regions`), which breaks
        the nesting of the levels."""
        if sum(v is not None for v in (n_segments, threshold, scale)) > 1:
            raise ValueError("give at most one of n_segments, threshold and scale.")
        if scale is not None:
            threshold = self.threshold_of(scale)
        elif n_segments is None and threshold is None:
            if self.default_threshold is None:
                raise ValueError("this hierarchy has no default level: give n_segments.")
            threshold = self.default_threshold
        leaf = self.tree.leaf_labels(n_segments, threshold)
        if (n_segments is None if absorb_thin is None else absorb_thin) and self.leaves:
            if threshold is None:  # the height of the cut's last merge
                m = self.tree.n_merges(n_segments)
                threshold = self.heights[m - 1] if m else 0.0
            leaf = absorb_thin_regions(leaf, *self.leaves[:5], threshold=threshold,
                                       width=self.leaves[5])
        return relabel_by_first_appearance(leaf[self.superpixels])

    def linkage(self):
        """scipy linkage matrix of the tree over the superpixels (`Hierarchy.linkage`)."""
        return self.tree.linkage()

    def ucm(self):
        """Ultrametric contour map (H, W) float64: at every pixel the height at which its border
        with its right or lower neighbour disappears (0 inside a superpixel). ``ucm() > t``
        marks the boundaries of ``labels(threshold=t, absorb_thin=False)``."""
        sp = self.superpixels
        out = np.zeros(sp.shape)
        for sl1, sl2 in (((slice(None), slice(None, -1)), (slice(None), slice(1, None))),
                         ((slice(None, -1), slice(None)), (slice(1, None), slice(None)))):
            l1, l2 = sp[sl1], sp[sl2]
            d = l1 != l2
            keys, inv = np.unique(np.minimum(l1[d], l2[d]) * self.n_leaves
                                  + np.maximum(l1[d], l2[d]), return_inverse=True)
            h = self.tree.merge_height(keys // self.n_leaves, keys % self.n_leaves)
            sub = out[sl1]
            sub[d] = np.maximum(sub[d], h[inv])
        return out
