"""The findings of a text that a front end analyses itself, kept in its project run's disk cache.

The flake8 plugin analyses the lines flake8 read with the entries and spellings a project walk gave the
file (`amplint.scope`). A warm `amplint check FILE` takes the file's findings from the cache; the plugin
parsed the file with LibCST at every run instead, which for one file was most of what a warm
`flake8 --select AMP FILE` adds to `amplint check FILE` (importing LibCST included). So those findings are
cached too, under their own kind, keyed by everything the analysis reads: amplint's code, the path as given
(the findings carry it), the configuration with the project's spellings, the text, the entries, and whether
`# noqa` was applied, as `Loader.findings` keys its own. flake8 checks saved files, so the entries grow as
the summaries' do, one per saved version. The language server does not use it: it analyses a buffer at
every edit, and keeps its answers in memory (`lsp.workspace`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from amplint.config import Config
from amplint.model import Finding
from amplint.project.cache import DiskCache, digest
from amplint.project.summary import EntryContext

KIND = "text-findings"


@dataclass(frozen=True)
class TextFindings:
    """Findings of analysed texts, in `cache` (a cache with no directory keeps nothing)."""

    cache: DiskCache
    fingerprint: str  # `cache.code_fingerprint()`: what the project run keyed its own entries with

    def key(self, text: str, path: str, config: Config, entries: Sequence[EntryContext], noqa: bool) -> Optional[str]:
        """The entry's key; None with no cache, and then the text is not hashed."""
        if self.cache.directory is None:
            return None
        text_bytes = text.encode("utf-8", "surrogatepass")
        return digest(self.fingerprint, KIND, path, repr(config), text_bytes, tuple(entries), noqa)

    def get(self, key: Optional[str]) -> Optional[Tuple[Finding, ...]]:
        """The findings kept under `key`; None when there are none, or what is there is not findings."""
        if key is None:
            return None
        found = self.cache.get(KIND, key)
        if isinstance(found, tuple) and all(isinstance(finding, Finding) for finding in found):
            return found
        return None

    def put(self, key: Optional[str], findings: Sequence[Finding]) -> None:
        if key is not None:
            self.cache.put(KIND, key, tuple(findings))


def not_kept() -> TextFindings:
    """Findings kept nowhere: a run with no cache."""
    return TextFindings(DiskCache(None), "")
