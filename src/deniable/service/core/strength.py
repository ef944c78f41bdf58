"""How strong the admin secrets must be for a server to start.

Whoever holds the admin token reads every result and export, so it must not be guessable
even at many guesses per second from many addresses (the guess limit per address,
:mod:`deniable.service.core.security`, slows one address, not a botnet).  A token is **weak**,
and :func:`check_admin_secrets` refuses it, when

* it holds fewer than 128 bits by its alphabet: its length times log2 of the smallest of
  these alphabets that holds all its characters, decimal digits (10), hexadecimal digits
  (16), base64url (64: ``A-Z a-z 0-9 - _``) or printable ASCII (95), is under 128, that is
  fewer than 39 digits, 32 hex digits, 22 base64url characters or 20 other characters
  (``secrets.token_urlsafe(32)``, what ``deniable serve`` generates, has 43 characters);
* it holds a space or a character outside printable ASCII (a passphrase, not a token);
* it is one short piece repeated (``abcabcabc...``, ``0123456789abcdef`` twice), or
* it is a well-known value (:data:`COMMON_SECRETS`, any case).

The admin password (optional: the dashboard's login form takes it besides the token) is
weak when it is shorter than 12 characters, a repeated piece, or a well-known value.  The
rule holds wherever the server listens, loopback included: behind a reverse proxy on the
same machine, a server on loopback is on the internet.
"""

from __future__ import annotations

import math
import string
from typing import Any

from deniable.exceptions import ParameterError

__all__ = [
    "COMMON_SECRETS",
    "MIN_PASSWORD_LENGTH",
    "MIN_TOKEN_BITS",
    "check_admin_secrets",
    "password_weakness",
    "token_weakness",
]

#: The fewest bits a token may hold by its alphabet.
MIN_TOKEN_BITS = 128
#: The shortest admin password.
MIN_PASSWORD_LENGTH = 12
#: Values found in examples and defaults, refused whatever their length.
COMMON_SECRETS = frozenset(
    {
        "admin",
        "administrator",
        "change-me",
        "change_me",
        "changeme",
        "changethis",
        "default",
        "deniable",
        "letmein",
        "password",
        "password123",
        "please-change-me",
        "qwerty",
        "secret",
        "test",
        "token",
        "your-admin-token",
        "your-secret-token",
    }
)
_ALPHABETS = (
    ("decimal digits", 10, frozenset(string.digits)),
    ("hex digits", 16, frozenset(string.hexdigits)),
    ("base64url characters", 64, frozenset(string.ascii_letters + string.digits + "-_")),
    ("printable ASCII characters", 95, frozenset(string.printable[:95])),
)


def _repeated(value: str) -> bool:
    """Whether ``value`` is one piece of at most half its length, repeated (the last time
    perhaps in part: ``abcabcab``)."""
    n = len(value)
    return any(value[size:] == value[:-size] for size in range(1, n // 2 + 1))


def token_weakness(token: str) -> str | None:
    """Why ``token`` is weak (the rule it breaks and its length, never the token), or None.

    >>> token_weakness("0123456789abcdef" * 2)
    'it is one short piece repeated (32 characters)'
    >>> token_weakness("deadbeef")
    'it holds 32 bits (8 hex digits); at least 128 are required (32 hex digits)'
    >>> token_weakness("pD2vW9rL0sXq7NbK4yTz1fHc8uJm5eGa3iYo6kQw-_Z") is None
    True
    """
    if token.lower() in COMMON_SECRETS:
        return "it is a well-known value"
    if any(c not in _ALPHABETS[-1][2] or c.isspace() for c in token):
        return "it holds a space or a character outside printable ASCII"
    name, size, _ = next(a for a in _ALPHABETS if set(token) <= a[2])
    bits = len(token) * math.log2(size)
    if bits < MIN_TOKEN_BITS:
        need = math.ceil(MIN_TOKEN_BITS / math.log2(size))
        return (
            f"it holds {math.floor(bits)} bits ({len(token)} {name}); at least "
            f"{MIN_TOKEN_BITS} are required ({need} {name})"
        )
    if _repeated(token):
        return f"it is one short piece repeated ({len(token)} characters)"
    return None


def password_weakness(password: str) -> str | None:
    """Why ``password`` is weak, or None (see the module docstring)."""
    if password.lower() in COMMON_SECRETS:
        return "it is a well-known value"
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"it has {len(password)} characters; at least {MIN_PASSWORD_LENGTH} are required"
    if _repeated(password):
        return f"it is one short piece repeated ({len(password)} characters)"
    return None


def check_admin_secrets(settings: Any) -> None:
    """Refuse weak admin secrets.

    Raises
    ------
    ParameterError
        Naming the setting and its variable, the rule broken and how to make a strong one;
        the secret itself is never quoted.
    """
    token = str(getattr(settings, "admin_token", "") or "")
    why = token_weakness(token)
    if why is not None:
        raise ParameterError(
            f"`admin_token` (DENIABLE_ADMIN_TOKEN) is too weak: {why}.  Use at least "
            f"{MIN_TOKEN_BITS} random bits, e.g. `python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'`, or leave it unset to have one generated."
        )
    password = getattr(settings, "admin_password", None)
    if password:
        why = password_weakness(str(password))
        if why is not None:
            raise ParameterError(
                f"`admin_password` (DENIABLE_ADMIN_PASSWORD) is too weak: {why}.  Use at least "
                f"{MIN_PASSWORD_LENGTH} characters, neither a repeated piece nor a well-known "
                "value, or leave it unset (the login form then takes the token only)."
            )
