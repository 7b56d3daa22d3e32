"""``datasets`` builder configs whose construction options are one dataclass.

A builder config (a ``datasets.BuilderConfig`` dataclass) keeps its options in one field,
``options`` (:class:`~coreb_toolkit.builders.coreb.qrels.QrelsOptions`, ``QualcodeOptions``),
instead of mirroring their fields. ``datasets`` sets the keyword arguments of
``load_dataset(..., min_hard_negatives=3)`` as attributes of the config; this mixin sends
those to ``options`` (validated there, by its ``__post_init__``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, ClassVar


class OptionsConfigMixin:
    """Attribute access to the fields of the config's ``options`` dataclass.

    ``OPTION_ALIASES`` maps older keyword names to option fields (``qrels_scheme`` ->
    ``scheme``).
    """

    OPTION_ALIASES: ClassVar[Mapping[str, str]] = {}

    def _option_field(self, name: str) -> str | None:
        options = self.__dict__.get("options")
        if options is None or name.startswith("__") or name == "options":
            return None
        target = self.OPTION_ALIASES.get(name, name)
        return target if target in {f.name for f in fields(options)} else None

    def __getattr__(self, name: str) -> Any:  # only called where normal lookup fails
        target = self._option_field(name)
        if target is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.__dict__["options"], target)

    def __setattr__(self, name: str, value: Any) -> None:
        target = self._option_field(name)
        if target is None:
            super().__setattr__(name, value)
        else:
            super().__setattr__("options", replace(self.__dict__["options"], **{target: value}))
