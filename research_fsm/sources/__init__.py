"""Research data sources: the mock, the offline company directory, name resolution.

Every source implements ``DataSource``; ``create_data_source`` picks one by name
or from ``RESEARCH_DATA_SOURCE``; ``CompanyIndex`` finds company mentions in text.
``TavilyWebSearch`` searches the web by topic (``WebResult`` items) for deep research.
"""

from ._base import (
    FINDING_FIELDS,
    INTENTS,
    CompanyRef,
    DataSource,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    SearchResult,
    SourceRef,
)
from ._directory import DirectorySource
from ._factory import DATA_SOURCE_ENV, DATA_SOURCE_KINDS, create_data_source
from ._index import CompanyIndex, CompanyMatch
from ._mock import MOCK_FIELDS, MockDataSource
from ._websearch import TavilyWebSearch, WebResult, WebSearch

__all__ = [
    "DATA_SOURCE_ENV",
    "DATA_SOURCE_KINDS",
    "FINDING_FIELDS",
    "INTENTS",
    "MOCK_FIELDS",
    "CompanyIndex",
    "CompanyMatch",
    "CompanyRef",
    "DataSource",
    "DataSourceError",
    "DirectorySource",
    "MockDataSource",
    "ResearchFindings",
    "SearchContext",
    "SearchResult",
    "SourceRef",
    "TavilyWebSearch",
    "WebResult",
    "WebSearch",
    "create_data_source",
]
