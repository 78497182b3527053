"""Submitter tokens: an admin creates one per submitter; the database keeps only its sha256."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from harness.display import display_problem
from harness.errors import HarnessError
from harness.leaderboard.db import Database, Token, utcnow

PREFIX = "hlb_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(db: Database, name: str) -> str:
    """A new token for submitter ``name``; shown once, never stored in clear."""
    name = name.strip()
    if not name or len(name) > 200:
        raise HarnessError("a token name must be 1 to 200 characters")
    problem = display_problem("a token's submitter name", name)  # it is shown on every page of the board
    if problem is not None:
        raise HarnessError(problem)
    token = PREFIX + secrets.token_urlsafe(32)
    with db.session() as session:
        session.add(Token(name=name, token_hash=_digest(token)))
        try:
            session.commit()
        except IntegrityError:
            raise HarnessError(f"a token named {name!r} exists already (revoke it first)") from None
    return token


def revoke_token(db: Database, name: str) -> None:
    """Revokes the active token ``name``; its row is renamed so the name can be given out again."""
    with db.session() as session:
        row = session.scalar(select(Token).where(Token.name == name, Token.revoked_at.is_(None)))
        if row is None:
            raise HarnessError(f"no active token named {name!r}")
        row.revoked_at = utcnow()
        row.name = f"{name} (revoked {row.revoked_at:%Y-%m-%d %H:%M:%S})"
        session.commit()


def submitter_of(db: Database, token: str | None) -> str | None:
    """The submitter's name for a valid, unrevoked token, else None."""
    if not token:
        return None
    with db.session() as session:
        row = session.scalar(select(Token).where(Token.token_hash == _digest(token), Token.revoked_at.is_(None)))
        return row.name if row else None


def list_tokens(db: Database) -> list[tuple[str, str, bool]]:
    """(name, created, active) for every token."""
    with db.session() as session:
        return [
            (t.name, t.created_at.isoformat(), t.revoked_at is None)
            for t in session.scalars(select(Token).order_by(Token.id))
        ]
