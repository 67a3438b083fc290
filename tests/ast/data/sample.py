"""Inventory service: a small but realistic module."""
from __future__ import annotations

import json
import os.path
from dataclasses import dataclass, field
from typing import Dict, List, Optional


@dataclass
class Item:
    sku: str
    quantity: int = 0
    tags: List[str] = field(default_factory=list)


class Inventory:
    """Keeps items by SKU and persists them as JSON."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.items: Dict[str, Item] = {}

    def load(self) -> None:
        if not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            for raw in json.load(f):
                item = Item(raw["sku"], raw.get("quantity", 0), raw.get("tags", []))
                self.items[item.sku] = item

    def restock(self, sku: str, amount: int) -> Optional[Item]:
        item = self.items.get(sku)
        if item is None:
            return None
        item.quantity += amo<@a>unt
        return item
        <@blank>

    async def total(self) -> int:
        import math
        return math.fsum(i.quantity for i in self.items.values())


def main(argv: List[str]) -> int:
    inv = Inventory(argv[1] if len(argv) > 1 else "inventory.json")
    inv.load()
    double = lambda x: x * <@lambda>2
    return double(0)
    <@eof>
