"""Keeping secrets out of records: which variable names look secret, and credentials in values.

Records, notebooks and HTML reports are shared across a cluster's users, so every ``env_*``
value passes through :func:`redact` before it is stored. A value is masked by its shape (a PEM
private key, a GitHub / Slack / JWT token, ``user:password@host``, ``--password x``), not only
by a name such as ``password=`` in front of it.
"""

from __future__ import annotations

import re

#: Variable names that look like they hold a secret; such variables are never copied. The
#: short words (``PW``, ``PSK``, ``JWT``, ...) count only as a whole ``_``-separated part
#: (``NCCL_IB_PW``, not ``NCCL_PWR_LIMIT``).
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|PWD|CRED|PRIVATE|AUTH|COOKIE|SESSION|SIGNATURE|CERT|SALT"
    r"|(?:^|_)(?:PW|PSK|JWT|OTP|HMAC)(?:_|$)",
    re.IGNORECASE)
MASK = "***"
#: A PEM private key block (RSA, EC, OPENSSH, ENCRYPTED, PGP ...), to its END line or, cut
#: off, to the end of the value.
_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)
#: ``scheme://user:password@host``: the user-info part of a URL (to its last ``@``, since
#: passwords hold unescaped ``@`` more often than the standard allows).
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]+)@")
#: ``user:password@host`` without a scheme (scp, rsync, database strings).
_BARE_USERINFO = re.compile(r"(?<![\w.+%~:/@*-])[\w.+%~-]+:[^\s/]+@(?=[\w\[])")
#: Tokens recognisable by their prefix: GitHub (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``,
#: ``ghr_``, ``github_pat_``), GitLab, Slack, Hugging Face, Google API keys, Stripe, npm,
#: OpenAI / Anthropic style ``sk-``, AWS access key ids (and a ``:secret`` after one), JWTs.
_TOKEN = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{8,}|xapp-[A-Za-z0-9-]{20,}|hf_[A-Za-z0-9]{30,}"
    r"|AIza[0-9A-Za-z_-]{35}|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|npm_[A-Za-z0-9]{36}"
    r"|sk-[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[A-Z0-9]{12,}(?::\S+)?"
    r"|eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)")
#: Words that make the key in front of a value (``password=``, ``--token x``) a secret's.
_SECRET_WORDS = (r"passw(?:or)?d|pass(?:phrase)?|pwd|pw|psk|jwt|secret|token|api[_-]?key"
                 r"|access[_-]?key|credentials?|private[_-]?key|auth|signature|sig|session")
#: ``password=...``, ``api_key: ...``, ``token=...``, ``sig=...`` inside a value (query strings,
#: options, headers).
_KEY_VALUE = re.compile(
    rf"(?P<key>[\w.-]*(?:{_SECRET_WORDS})[\w.-]*)(?P<sep>\s*[=:]\s*)"
    r"(?P<value>[^\s,;&\"']+)", re.IGNORECASE)
#: ``--password x`` / ``-token x``: an option then its value after a space (not a ``--flag``).
_OPTION_VALUE = re.compile(
    rf"(?P<key>(?<![\w-])--?[\w.-]*(?:{_SECRET_WORDS})[\w.-]*)(?P<sep>\s+)(?P<value>(?!--)\S+)",
    re.IGNORECASE)
#: ``Authorization: Bearer <credential>`` and the like.
_SCHEME_CREDENTIAL = re.compile(r"(?P<scheme>\b(?:bearer|basic|digest|token)\s+)"
                                r"(?P<value>[A-Za-z0-9._~+/=-]{6,})", re.IGNORECASE)


def redact(value: str) -> str:
    """``value`` with PEM private keys, URL and ``user:pw@host`` user-info, known token shapes
    (GitHub, Slack, JWT, AWS key ids, ...), ``Bearer <token>`` credentials, ``--password x``
    options and ``secret-looking-key=value`` (or ``key: value``) pairs masked as ``***``."""
    value = _PEM_PRIVATE_KEY.sub(MASK, value)
    value = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", value)
    value = _BARE_USERINFO.sub(f"{MASK}@", value)
    value = _TOKEN.sub(MASK, value)
    value = _SCHEME_CREDENTIAL.sub(lambda m: f"{m['scheme']}{MASK}", value)
    value = _OPTION_VALUE.sub(lambda m: f"{m['key']}{m['sep']}{MASK}", value)
    return _KEY_VALUE.sub(lambda m: f"{m['key']}{m['sep']}{MASK}", value)


def redact_values(columns: dict[str, object]) -> dict[str, object]:
    """Every text value of ``columns`` through :func:`redact`."""
    return {k: redact(v) if isinstance(v, str) else v for k, v in columns.items()}
