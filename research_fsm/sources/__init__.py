"""Research data sources: the mock, the offline company directory, name resolution.

Every source implements ``DataSource``; ``create_data_source`` picks one by name
or from ``RESEARCH_DATA_SOURCE``; ``CompanyIndex`` finds company mentions in text.
``TavilyWebSearch`` searches the web by topic (``WebResult`` items) for deep research.

Also public, for the apps built on the sources: the words name resolution knows
(``COMMON_WORDS``, ``LEGAL_SUFFIXES``, ``PLACES``, ``tokenize``), the directory's
``CompanyProfile`` with the helpers that tidy its infobox values for display
(``clean_value``, ``clean_founded``, ``split_people``, ``split_people_names``,
``split_products``, ``format_money``, ``parse_money``), and ``PeerRanking``. The public
module ``urls`` checks web addresses as a browser reads them (``web_url``).
"""

from ._base import (
    FACT_KEYS,
    FINDING_FIELDS,
    INTENTS,
    DataSource,
    DataSourceError,
    ResearchFindings,
    SearchContext,
    SearchResult,
    SourceRef,
)
from ._directory import DirectorySource
from ._english import english_words
from ._factory import DATA_SOURCE_ENV, DATA_SOURCE_KINDS, create_data_source
from ._format import (
    Money,
    fiscal_year,
    format_money,
    parse_money,
    split_people_names,
    split_products,
)
from ._index import CompanyIndex, CompanyMatch
from ._mock import MOCK_FIELDS, MockDataSource
from ._peers import PeerRanking
from ._profiles import CompanyProfile, clean_founded, clean_value, split_people
from ._ref import CompanyRef
from ._text import COMMON_WORDS, LEGAL_SUFFIXES, ORDINARY_WORDS, Token, tokenize
from ._websearch import TavilyWebSearch, WebResult, WebSearch
from ._words import PLACES

__all__ = [
    "COMMON_WORDS",
    "DATA_SOURCE_ENV",
    "DATA_SOURCE_KINDS",
    "FACT_KEYS",
    "FINDING_FIELDS",
    "INTENTS",
    "LEGAL_SUFFIXES",
    "MOCK_FIELDS",
    "ORDINARY_WORDS",
    "PLACES",
    "CompanyIndex",
    "CompanyMatch",
    "CompanyProfile",
    "CompanyRef",
    "DataSource",
    "DataSourceError",
    "DirectorySource",
    "MockDataSource",
    "Money",
    "PeerRanking",
    "ResearchFindings",
    "SearchContext",
    "SearchResult",
    "SourceRef",
    "TavilyWebSearch",
    "Token",
    "WebResult",
    "WebSearch",
    "clean_founded",
    "clean_value",
    "create_data_source",
    "english_words",
    "fiscal_year",
    "format_money",
    "parse_money",
    "split_people",
    "split_people_names",
    "split_products",
    "tokenize",
]
