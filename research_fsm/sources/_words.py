"""Word lists that keep ordinary English out of company-name matching."""

from __future__ import annotations

from typing import Final

_GENERAL = """
    a about above access according account across act action actually add after
    again against age agent ago agree ahead air all almost alone along already
    also always am america american among amount an analysis analyst and annual
    another answer any anyone anything are area around article as ask asked at
    available average away back bad bank based basic be became because become
    been before being believe below best better between big bit board body book
    both brand brief bring build business but buy by call came can capital car
    care case cash cause center chance change cheap check chief city claim clear
    close come coming common community company compare compared comparison
    competitor competitors concern consider consumer continue control cost could
    country course cover create current customer customers data day days deal
    decade decision describe detail details development did different do does
    doing done down during each early earnings easy economy effect either else
    employee employees end energy engine enough entire equity even event ever
    every everything example expect experience explain face fact fair fall family
    far fast feel few field figure figures final financial find fine first five
    focus follow following for forecast form former forum forward found four free
    friend from front full fund future gain general get give given global go
    going good got great group grow growth guide had half hand happen happened
    happening hard has have he head health hear hello help her here hey hi high
    him his history hold home hope how however human i idea if important in
    include including income increase industry info information inside instead
    interest interesting international into invest investment investors is issue
    it item its itself job just keep key kind know known large last late later
    latest lead leader leadership learn least leave less let level life like
    likely line list little live local long look looking lose lot low made main
    major make management manager many market may maybe me mean meant measure
    meet member might million billion mind model modern money month more morning
    most move much must my name national near need never new news next nice no
    none nor not note nothing now number of off offer office often old on once one
    online only open operations option or order other others our out outlook over
    overall overview own part partner past pay people per percent perhaps period
    person personal place plan play please plus point policy position possible
    power present president price prices probably problem process product
    production products profit program progress project public put quality
    quarter question quick quite rate rather reach read real really reason recent
    recently record region release report reports research result results return
    revenue right rise risk role round rule run said sale sales same say second
    sector see seem sell send series service services set several share shares
    she short should show side since single six size small so social some
    someone something sometimes soon sort source sources space special spend
    staff stage start state statement still stock stocks story strategy strong
    structure study such summary supply support sure system take talk tax team
    tech technology tell ten term than thank thanks that the their them then
    there these they thing things think third this those though three through
    time to today together too top total toward trade trend trust try turn two
    type under understand unit until up update upon us use used user using value
    various version very view vs want was watch way we week well were what whats
    when where whether which while who whole whom whose why will win with within
    without work world worth would write year years yes yet you young your
"""

_NAMES_THAT_ARE_WORDS = """
    accord admiral aeon alamo alarm ball being berkeley block booking box buckle
    cactus campbell canon carnival carter cars chevron city compass continental
    cooper dana deluxe diodes diploma disco domino douglas dover employers enact
    energizer everest evolution gates griffon harmonic hartford hawkins hermes
    hexagon hilltop hub indus inform informal insult integer intel interface
    investor kingfisher knowles kohl lindsay lowe mascot mason match moody mosaic
    norma noble oracle orange orion partners phoenix plexus pool progressive
    prudential puma radian rational recruit resumed rogers sabre sage screen
    sharp shell shift southern stepan stephan stride tapestry target tennant
    tidewater travelers uber universal vista waters wendy wiley williams xylem yelp
"""

_ACRONYMS = """
    ADAM AI ALEX API AR ASAP AUTO AWS B2B B2C BOOT BTW CAKE CALM CD CEO CFO CHEF
    CHF CI CLI COIN COO CPI CPU CRM CSV CTO CURB DB DD DNS DOC DORM DOW DR DUE DV
    EAT EBIT EBITDA EG EPS ERP ESG EST ETA ETF EU EUR EV EVS EYE FAQ FDA FED FIX
    FUN FY FYI GBP GCP GDP GEN GIT GMT GOLF GPT GPU HOOD HQ HR HTML HTTP ID IDS IE
    IMO INC IO IOT IP IPO JOE JPY JS JSON KEYS KPI LLC LLM LLMS LOL LTD MAN MD ML
    MVP NB NEO NLP NOTE NV NYSE OK OKR OMG OS PC PDF PE PEAK PEG PH PI PLC PM POC
    PR PS PST PY Q1 Q2 Q3 Q4 QA QOQ R&D RAM RAMP RE ROCK ROE ROI SA SAAS SAFE SDK
    SE SEC SEO SHOP SKY SLA SMS SQL SSD SSH SSL SSO STEP SUV SW TAP TBD TCP TE
    TILE TL TLDR TLS TODO TR TRIP TS TV UDP UI UK UN URL USA USB USD UTC UX VM VR
    XML YOY YTD YUM
"""

ORDINARY_WORDS: Final[frozenset[str]] = frozenset(_GENERAL.split())
"""Frequent English words, lower case."""

NAMES_THAT_ARE_WORDS: Final[frozenset[str]] = frozenset(_NAMES_THAT_ARE_WORDS.split())
"""Company names (or words one typo away from one) that are also English words."""

ACRONYMS: Final[frozenset[str]] = frozenset(_ACRONYMS.split())
"""Upper-case abbreviations and words that are not meant as tickers in questions."""

_PLACES = """
    afghanistan africa america argentina asia australia austria belgium berlin brazil
    canada china denmark egypt england europe finland france germany greece india
    indonesia ireland israel italy japan korea london madrid mexico moscow netherlands
    norway paris poland portugal russia spain sweden switzerland tokyo turkey ukraine
    vietnam washington
"""

PLACES: Final[frozenset[str]] = frozenset(_PLACES.split())
"""Countries, continents and capitals (lower case): capitalised words that are not companies."""
