"""Who is calling: one `Actor` per request, resolved once, passed to every service and selector.

An actor is a person signed in with a session (acting for the organisation they chose), an API
token (acting for its organisation, within its scopes), or an anonymous visitor (no organisation;
known only by a keyed hash of the client address, never the address itself).
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.utils.crypto import salted_hmac
from rest_framework.request import Request

from accounts.models import ApiToken, Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# The session key that remembers which organisation a person acts for (the switcher sets it).
SESSION_ORGANIZATION = "organization_id"

# Scopes a token may carry; a person with a session has all of them.
SCOPE_DIAGNOSES_WRITE = "diagnoses:write"
SCOPE_DIAGNOSES_READ = "diagnoses:read"
SCOPE_ENCYCLOPEDIA_READ = "encyclopedia:read"
ALL_SCOPES = frozenset({SCOPE_DIAGNOSES_WRITE, SCOPE_DIAGNOSES_READ, SCOPE_ENCYCLOPEDIA_READ})
# In the order forms and documentation list them.
SCOPE_CHOICES = (
    (SCOPE_DIAGNOSES_WRITE, "Submit logs for diagnosis"),
    (SCOPE_DIAGNOSES_READ, "Read the organisation's diagnoses"),
    (SCOPE_ENCYCLOPEDIA_READ, "Read the encyclopedia through the API"),
)

# Roles that manage an organisation: members, domains, tokens, evaluations.
MANAGER_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)

# Where actor_of keeps its answer on the Django request; one per kind of request object, since
# a DRF request may authenticate a token where the plain request only knows the session.
_CACHE_PAGE = "_rootcause_actor"
_CACHE_API = "_rootcause_api_actor"


@dataclass(frozen=True)
class Actor:
    organization: Organization | None
    user: User | None = None
    token: ApiToken | None = None
    role: str | None = None  # the person's role in `organization`; None for tokens and visitors
    scopes: frozenset[str] = field(default=ALL_SCOPES)
    # For a visitor: a keyed hash of the client address (IPv6 by /64), what quotas count.
    anonymous_subject: str | None = None

    @property
    def is_anonymous(self) -> bool:
        return self.user is None and self.token is None

    @property
    def is_person(self) -> bool:
        return self.user is not None and self.token is None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def has_role(self, *roles: str) -> bool:
        return self.role is not None and self.role in roles

    @property
    def manages_organization(self) -> bool:
        return self.has_role(*MANAGER_ROLES)


def _ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value.strip())
    except ValueError:
        return None


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the one the trusted proxies in front of us saw.

    With TRUSTED_PROXY_COUNT = n, the n-th address from the right of X-Forwarded-For is the
    client (each proxy appends what it saw); a client cannot forge the part our proxies wrote.
    Fewer hops than proxies, or a hop that is not an address, means the header did not come
    through our proxies as configured: REMOTE_ADDR is then the only address we can trust.
    """
    remote = str(request.META.get("REMOTE_ADDR", ""))
    trusted = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if trusted and forwarded:
        hops = [h.strip() for h in forwarded.split(",") if h.strip()]
        if len(hops) >= trusted:
            ip = _ip(hops[-trusted])
            if ip is not None:
                return str(ip)
    return remote


def anonymous_subject(address: str) -> str:
    """A keyed hash of a client address; IPv6 addresses count by their /64 network.

    One IPv6 host usually holds a whole /64, so counting single addresses would hand out a quota
    per address. The key derives from SECRET_KEY, so the hash cannot be reversed by enumerating
    addresses.
    """
    ip = _ip(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv6Address):
        canonical = str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    elif ip is not None:
        canonical = str(ip)
    else:
        canonical = address or "unknown"
    return salted_hmac("accounts.anonymous_subject", canonical, algorithm="sha256").hexdigest()[:32]


def membership_for(user: User, organization_id: object) -> Membership | None:
    """The person's membership of the organisation they chose, if it still exists."""
    try:
        chosen = uuid.UUID(str(organization_id))
    except ValueError:
        return None  # nothing chosen, or a session from before ids were UUIDs
    return (
        Membership.objects.select_related("organization")
        .filter(user=user, organization_id=chosen)
        .first()
    )


def default_membership(user: User) -> Membership | None:
    """The organisation a person acts for when they have not chosen: their earliest membership."""
    return (
        Membership.objects.select_related("organization")
        .filter(user=user)
        .order_by("created_at", "id")
        .first()
    )


def actor_for_person(user: User, chosen_organization_id: object = None) -> Actor:
    membership = None
    if chosen_organization_id:
        membership = membership_for(user, chosen_organization_id)
    membership = membership or default_membership(user)
    if membership is None:
        return Actor(organization=None, user=user)
    return Actor(organization=membership.organization, user=user, role=membership.role)


def actor_for_token(token: ApiToken) -> Actor:
    return Actor(
        organization=token.organization,
        token=token,
        scopes=frozenset(token.scopes) & ALL_SCOPES,
    )


def actor_for_visitor(request: HttpRequest) -> Actor:
    return Actor(organization=None, anonymous_subject=anonymous_subject(client_address(request)))


def actor_of(request: HttpRequest | Request) -> Actor:
    """The actor of a Django or DRF request, resolved on first use and kept on the request.

    Token authentication (DRF) puts the token in `request.auth`; a session puts the person in
    `request.user`; anyone else is a visitor known by the hash of their address. Call it from a
    view, after authentication: a DRF request authenticates when its view runs.
    """
    django_request: HttpRequest = request._request if isinstance(request, Request) else request
    cache = _CACHE_API if isinstance(request, Request) else _CACHE_PAGE
    cached: Actor | None = django_request.__dict__.get(cache)
    if cached is not None:
        return cached
    auth = request.auth if isinstance(request, Request) else None
    user = getattr(request, "user", None)
    if isinstance(auth, ApiToken):
        actor = actor_for_token(auth)
    elif user is not None and user.is_authenticated and not isinstance(user, AnonymousUser):
        session = getattr(django_request, "session", None)
        chosen = session.get(SESSION_ORGANIZATION) if session is not None else None
        actor = actor_for_person(user, chosen)
    else:
        actor = actor_for_visitor(django_request)
    django_request.__dict__[cache] = actor
    return actor


def forget_actor(request: Request) -> None:
    """Drops the actor kept on a DRF request: the next `actor_of` resolves it again (after the
    request's user and auth were replaced, e.g. by nobody when a token is refused late)."""
    request._request.__dict__.pop(_CACHE_API, None)
