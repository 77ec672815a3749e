"""Keeping secrets out of records: which variable names look secret, and credentials in values.

Records, notebooks and HTML reports are shared across a cluster's users, so every ``env_*``
value passes through :func:`redact` before it is stored.
"""

from __future__ import annotations

import re

#: Variable names that look like they hold a secret; such variables are never copied.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASS|PWD|CRED|PRIVATE|AUTH|COOKIE|SESSION|SIGNATURE|CERT|SALT",
    re.IGNORECASE)
#: ``scheme://user:password@host``: the user-info part of a URL.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]+)@")
#: ``password=...``, ``api_key: ...``, ``token=...``, ``sig=...`` inside a value (query strings,
#: options, headers).
_KEY_VALUE = re.compile(
    r"(?P<key>[\w.-]*(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|access[_-]?key|credential"
    r"|private[_-]?key|auth|signature|sig|session)[\w.-]*)(?P<sep>\s*[=:]\s*)"
    r"(?P<value>[^\s,;&\"']+)", re.IGNORECASE)
#: ``Authorization: Bearer <credential>`` and the like.
_SCHEME_CREDENTIAL = re.compile(r"(?P<scheme>\b(?:bearer|basic|digest|token)\s+)"
                                r"(?P<value>[A-Za-z0-9._~+/=-]{6,})", re.IGNORECASE)
#: AWS access key ids (``AKIA...`` / ``ASIA...``) and a ``:secret`` written after one.
_AWS_KEY = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{12,}(?::\S+)?")
MASK = "***"


def redact(value: str) -> str:
    """``value`` with URL user-info, AWS key ids, ``Bearer <token>`` credentials and
    ``secret-looking-key=value`` (or ``key: value``) pairs masked as ``***``."""
    value = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", value)
    value = _AWS_KEY.sub(MASK, value)
    value = _SCHEME_CREDENTIAL.sub(lambda m: f"{m['scheme']}{MASK}", value)
    return _KEY_VALUE.sub(lambda m: f"{m['key']}{m['sep']}{MASK}", value)


def redact_values(columns: dict[str, object]) -> dict[str, object]:
    """Every text value of ``columns`` through :func:`redact`."""
    return {k: redact(v) if isinstance(v, str) else v for k, v in columns.items()}
