"""A small demo repository for people who start the dashboard outside a git repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .locations import cache_dir
from .records import MemoryDraft

FILES = {
    "README.md": "# demo shop\n\nA tiny shop used to show cortex-tui.\n",
    "shop/__init__.py": "",
    "shop/cart.py": "from .pricing import price_of\n\n\nclass Cart:\n    def __init__(self):\n        self.items = []\n\n    def add(self, sku: str) -> None:\n        self.items.append(sku)\n\n    def total(self) -> float:\n        return sum(price_of(s) for s in self.items)\n",
    "shop/pricing.py": "TAX_RATE = 0.2\n\n\ndef price_of(sku: str) -> float:\n    \"\"\"Price with tax.\"\"\"\n    base = 10.0 if sku.startswith(\"A\") else 5.0\n    return base * (1 + TAX_RATE)\n",
    "shop/shipping.py": "def shipping_cost(weight_kg: float) -> float:\n    return 4.0 + 0.5 * weight_kg\n",
    "tests/test_cart.py": "from shop.cart import Cart\n\n\ndef test_empty_total():\n    assert Cart().total() == 0\n",
}
COMMITS = [
    (("README.md", "shop/__init__.py", "shop/pricing.py"), "Add pricing with tax"),
    (("shop/cart.py",), "Add a cart that totals prices"),
    (("shop/shipping.py", "tests/test_cart.py"), "Add shipping costs and a first test"),
]
MEMORIES = [
    MemoryDraft(text="Prices always include tax; never add tax again at checkout.", kind="decision", title="Prices include tax",
                files=("shop/pricing.py",), tags=("pricing",)),
    MemoryDraft(text="Shipping should get a fuel surcharge before the launch.", kind="task", title="Fuel surcharge",
                files=("shop/shipping.py",)),
    MemoryDraft(text="Cart.total() is called on every page view, so keep it cheap.", kind="note", files=("shop/cart.py",)),
]


def demo_repository() -> Path:
    """Create (once) and return the demo repository under the cache directory."""
    root = cache_dir() / "demo-shop"
    if (root / ".git").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "cortex demo", "GIT_AUTHOR_EMAIL": "demo@localhost",
           "GIT_COMMITTER_NAME": "cortex demo", "GIT_COMMITTER_EMAIL": "demo@localhost"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)

    git("init", "-q", "-b", "main")
    for files, message in COMMITS:
        for path in files:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(FILES[path], encoding="utf-8")
        git("add", *files)
        git("commit", "-q", "-m", message)
    (root / "shop" / "cart.py").write_text(FILES["shop/cart.py"] + "\n    def clear(self) -> None:\n        self.items.clear()\n")
    return root


def seed_memories(engine) -> None:
    """Add the demo memories once (the duplicate rule makes this idempotent)."""
    engine.remember_many(MEMORIES)
