"""Files in and out: images (`read_image`, `save_image`) and networks (`read_network`).

The lowest application layer: it imports nothing of graphclust, so the data loaders
(``graphclust.datasets``) and the applications can both use it. Pillow (images) and
networkx (networks) are imported when a file is read or written.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["read_image", "image_size", "save_image", "read_network"]


# --------------------------------------------------------------------------------------- images
def _pillow():
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading and writing image files needs Pillow: install the image extra with "
            "pip install graphclust[image]"
        ) from None
    return Image


def image_size(path):
    """(H, W, C) of an image file from its header, without decoding the pixels.

    Pillow opens files lazily: only the header is read, so a 14 000 x 14 000 picture costs no
    memory here (its decompression-bomb limit is not applied: nothing is decoded). C is 1 for
    grey files and 3 otherwise (what `read_image` returns).

    Raises
    ------
    FileNotFoundError, ValueError, ImportError
        As `read_image`.

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> from graphclust.io import image_size, save_image
    >>> path = os.path.join(tempfile.mkdtemp(), "a.png")
    >>> save_image(path, np.zeros((20, 30, 3), np.uint8))
    >>> image_size(path)
    (20, 30, 3)
    """
    Image = _pillow()
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"image file {str(path)!r} does not exist.")
    limit = Image.MAX_IMAGE_PIXELS
    try:
        Image.MAX_IMAGE_PIXELS = None  # the header only: nothing is decoded
        with Image.open(path) as im:
            W, H = im.size
            grey = im.mode in ("L", "I;16", "I;16B", "I", "1")
    except (OSError, SyntaxError, ValueError) as err:
        raise ValueError(f"cannot read image file {str(path)!r}: {err}") from err
    finally:
        Image.MAX_IMAGE_PIXELS = limit
    return int(H), int(W), 1 if grey else 3


def read_image(path):
    """Read a PNG / JPEG (any format Pillow reads) as a uint8 array (H, W) grey or (H, W, 3) colour.

    Palette and alpha images are converted to RGB; 16-bit grey stays uint16.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    array (H, W) or (H, W, 3)
        uint8 (uint16 for 16-bit grey files).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not an image Pillow can read, or it is larger than Pillow's
        decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``; check `image_size` first).
    ImportError
        Pillow is missing (install ``graphclust[image]``).
    """
    Image = _pillow()
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"image file {str(path)!r} does not exist.")
    try:
        with Image.open(path) as im:
            im.load()
            if im.mode in ("L", "I;16", "I;16B"):
                arr = np.asarray(im)
            elif im.mode == "I":
                arr = np.asarray(im).astype(np.uint16)
            else:
                arr = np.asarray(im.convert("RGB"))
    except Image.DecompressionBombError as err:
        raise ValueError(f"image file {str(path)!r} is too large to decode: {err}") from err
    except (OSError, SyntaxError, ValueError) as err:
        raise ValueError(f"cannot read image file {str(path)!r}: {err}") from err
    return arr


def save_image(path, array):
    """Write a uint8 (H, W) or (H, W, 3) array to `path` (format from the suffix) with Pillow.

    Raises
    ------
    TypeError
        `array` is not uint8.
    ImportError
        Pillow is missing (install ``graphclust[image]``).
    """
    Image = _pillow()
    arr = np.asarray(array)
    if arr.dtype != np.uint8:
        raise TypeError(f"save_image writes uint8 arrays; got dtype {arr.dtype}.")
    Image.fromarray(arr).save(os.fspath(path))


# ------------------------------------------------------------------------------------- networks
def _to_number(token):
    try:
        return int(token)
    except ValueError:
        pass
    return token


def _is_fraction(name):
    """A node name that reads as a number with a fractional part or exponent (a coordinate)."""
    if not isinstance(name, str):
        return False
    try:
        float(name)
    except ValueError:
        return False
    return name.lower() not in ("nan", "inf", "-inf", "infinity")


def _refuse_coordinates(G, path):
    """An edge list whose node names are mostly decimals is a table of points, not a network."""
    names = list(G.nodes)
    fractions = sum(_is_fraction(v) for v in names)
    if names and fractions > len(names) / 2:
        example = next(v for v in names if _is_fraction(v))
        raise ValueError(
            f"edge list {str(path)!r}: {fractions} of its {len(names)} node names are decimal "
            f"numbers (e.g. {example!r}), so it reads as a table of point coordinates, not a "
            f"network: cluster points with `graphclust cluster` (or `StabilityClustering`).")


def read_network(path):
    """Read a network from a GML file or a whitespace / comma separated edge list.

    GML files (suffix ``.gml``) are read with ``networkx.read_gml``, node labels taken from the
    ``label`` attribute when they are unique and from ``id`` otherwise. Any other file is an edge
    list: one edge per line, ``u v`` or ``u v weight`` (separated by spaces, tabs or commas), lines
    starting with ``#`` or ``%`` ignored; integer node names become ints. An edge list whose
    node names are mostly decimal numbers is a table of points and is refused.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    networkx.Graph, or networkx.DiGraph for a GML file declaring ``directed 1``
        A directed network stays directed: `graphclust.communities` refuses it with advice
        (``G.to_undirected()`` or ``symmetrize=True``) rather than guessing. Parallel edges are
        collapsed (the last one's attributes are kept).

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        The file cannot be parsed (the message names the file and the line).

    Examples
    --------
    >>> import tempfile, os
    >>> from graphclust.io import read_network
    >>> path = os.path.join(tempfile.mkdtemp(), "edges.txt")
    >>> _ = open(path, "w").write("1 2\\n2 3 0.5\\n")
    >>> sorted(read_network(path).edges(data="weight"))
    [(1, 2, 1.0), (2, 3, 0.5)]
    """
    import networkx as nx

    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"network file {str(path)!r} does not exist.")
    if path.is_dir():
        raise ValueError(f"network file {str(path)!r} is a directory; give a GML or edge-list file.")
    if path.suffix.lower() == ".gml":
        try:
            try:
                G = nx.read_gml(path)
            except nx.NetworkXError:
                G = nx.read_gml(path, label="id")
        except (nx.NetworkXError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(f"cannot read GML file {str(path)!r}: {err}") from err
    else:
        G = nx.Graph()
        try:
            text = path.read_text()
        except UnicodeDecodeError as err:
            raise ValueError(
                f"cannot read edge list {str(path)!r}: not a text file ({err})."
            ) from err
        for lineno, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line[0] in "#%":
                continue
            parts = line.replace(",", " ").split()
            if len(parts) not in (2, 3):
                raise ValueError(
                    f"cannot read edge list {str(path)!r}, line {lineno}: expected 'u v' or "
                    f"'u v weight'; got {line[:60]!r}."
                )
            w = 1.0
            if len(parts) == 3:
                try:
                    w = float(parts[2])
                except ValueError:
                    raise ValueError(
                        f"cannot read edge list {str(path)!r}, line {lineno}: weight "
                        f"{parts[2]!r} is not a number."
                    ) from None
            G.add_edge(_to_number(parts[0]), _to_number(parts[1]), weight=w)
        _refuse_coordinates(G, path)
    if G.is_multigraph():
        G = nx.DiGraph(G) if G.is_directed() else nx.Graph(G)
    return G
