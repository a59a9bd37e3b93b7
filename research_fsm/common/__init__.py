"""What the apps (``qa``, ``reports``, ``deep``) share, one public module per concept:

* ``text``: text from users, the web and LLMs made safe to keep and print
  (``clean_text``, ``for_terminal``), and ``is_japanese``.
* ``names``: company names as people type them (``find_companies``,
  ``typed_companies``, katakana and kanji in ``JA_NAMES``) and the question asked
  back when several fit (``ask_choices``).
* ``writer``: a ``Document`` rendered as Markdown and PDF, in English or Japanese.
* ``files``: owner-only files written all or nothing (``write_file``), ``utc_now`` and
  the ``Clock`` type.
* ``fence``: untrusted text fenced and escaped for a prompt (``fence``, ``data_rule``).
* ``figures``: the numbers a sentence states (``missing_figures``: a claim's numbers its
  quote lacks).
"""
