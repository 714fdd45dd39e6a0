"""Built-in context providers and the provider protocols."""

from .directory_skills import DirectorySkillProvider
from .history import HistorySearchProvider
from .protocols import (
    BranchAwareProvider,
    ContextProvider,
    SearchProvider,
    SkillProvider,
    WritableContextProvider,
    can_set,
    is_branch_aware,
    is_searchable,
    is_skill,
    is_writable,
)
from .sqlite_context import StoreContextProvider
from .sqlite_search import StoreSearchProvider
from .sqlite_skills import StoreSkillProvider
from .static import StaticProvider

__all__ = [
    "ContextProvider",
    "DirectorySkillProvider",
    "HistorySearchProvider",
    "SearchProvider",
    "SkillProvider",
    "StaticProvider",
    "StoreContextProvider",
    "StoreSearchProvider",
    "StoreSkillProvider",
    "WritableContextProvider",
    "BranchAwareProvider",
    "can_set",
    "is_branch_aware",
    "is_searchable",
    "is_skill",
    "is_writable",
]
