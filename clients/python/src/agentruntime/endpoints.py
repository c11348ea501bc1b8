"""Where the services are: one address for all five (``agentruntime dev``,
or a front door that routes by gRPC service name) or a per-service map
``control=HOST:PORT,tasks=...,routing=...,permission=...,evidence=...``
over a default address, the same convention as the CLI's ``--endpoints``
and ``AR_ENDPOINTS`` (docs/configuration.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Union

SERVICES = ("control", "tasks", "routing", "permission", "evidence")

__all__ = ["Endpoints", "SERVICES"]


def _check_addr(item: str, addr: str) -> None:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"endpoint {item!r}: want host:port")


@dataclass(frozen=True)
class Endpoints:
    """The address of each service; a service not named uses ``default``."""

    default: str = ""
    addrs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, addr in self.addrs.items():
            if name not in SERVICES:
                raise ValueError(f"endpoint {name}={addr}: unknown service {name!r} (want one of {', '.join(SERVICES)})")
            _check_addr(f"{name}={addr}", addr)
        if not self.default and set(self.addrs) != set(SERVICES):
            missing = [s for s in SERVICES if s not in self.addrs]
            raise ValueError(f"no default address and no endpoint for {', '.join(missing)}")

    @classmethod
    def parse(cls, spec: str, default: str = "") -> "Endpoints":
        """Parses ``name=host:port,...`` (the CLI's ``--endpoints``) over
        ``default``. An unknown name, an entry without ``=``, a name given
        twice or an address that is not host:port raises ValueError naming
        the entry."""
        addrs: Dict[str, str] = {}
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, addr = item.partition("=")
            name, addr = name.strip(), addr.strip()
            if not sep or not name or not addr:
                raise ValueError(f"endpoint {item!r}: want name=host:port")
            if name not in SERVICES:
                raise ValueError(f"endpoint {item!r}: unknown service {name!r} (want one of {', '.join(SERVICES)})")
            if name in addrs:
                raise ValueError(f"endpoint {item!r}: {name} is named twice")
            _check_addr(item, addr)
            addrs[name] = addr
        return cls(default=default, addrs=addrs)

    @classmethod
    def from_env(cls, default: str = "") -> "Endpoints":
        """``AR_ENDPOINTS`` over ``AR_ADDR`` (else ``default``)."""
        return cls.parse(os.environ.get("AR_ENDPOINTS", ""), os.environ.get("AR_ADDR", default))

    @classmethod
    def of(cls, where: Union["Endpoints", str, Mapping[str, str]]) -> "Endpoints":
        """Accepts an Endpoints, one address, a ``name=addr,...`` spec or a
        mapping (a ``"default"`` key is the fallback)."""
        if isinstance(where, Endpoints):
            return where
        if isinstance(where, str):
            return cls.parse(where) if "=" in where else cls(default=where)
        d = dict(where)
        default = d.pop("default", "")
        return cls(default=default, addrs=d)

    def addr(self, service: str) -> str:
        """Where ``service`` is."""
        return self.addrs.get(service, self.default)

    def __str__(self) -> str:
        items = ",".join(f"{n}={self.addrs[n]}" for n in sorted(self.addrs))
        if len(self.addrs) == len(SERVICES):
            return items
        if not items:
            return self.default
        return f"{items} (others: {self.default})"
