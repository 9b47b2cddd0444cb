"""An OAuth 2.1 authorization server for the integration tests, built on the official MCP Python
SDK's `mcp.server.auth` (its routes: RFC 8414 metadata, dynamic client registration, /authorize
with PKCE, /token). Its provider approves every authorization request at once (no person) and
issues JWT access tokens signed with RS256 or ES256 (PyJWT), bound to the requested `resource`.

Its signing keys are published at /jwks; the SDK's RFC 8414 metadata has no `jwks_uri`, so an
OpenID configuration at /.well-known/openid-configuration names it (the fallback a resource server
must follow). Test controls, under /test/:
  POST /test/mint    {"aud", "scope"?, "alg"?, "kid"?, "claims"?, "drop"?, "forge"?} -> {"token"}
                     forge: "none" (alg none), "hs256-public" (HS256 keyed with the RSA public key),
                     "unpublished" (a key never in /jwks)
  POST /test/rotate  publishes a new ES256 key -> {"kid"}
  GET  /test/stats   -> {"jwks_fetches"}

Usage: oauth_server.py --port PORT
"""

import argparse
import base64
import hashlib
import hmac
import json
import secrets
import time

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SCOPES = ["mcp:read", "mcp:write"]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n: int) -> str:
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class Keys:
    """The issuer's signing keys: kid -> (alg, private key). All are published unless unlisted."""

    def __init__(self):
        self.signing = {
            "rsa-1": ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "ec-1": ("ES256", ec.generate_private_key(ec.SECP256R1())),
        }
        self.unpublished = ("ES256", ec.generate_private_key(ec.SECP256R1()))
        self.fetches = 0

    def rotate(self) -> str:
        kid = f"ec-{len(self.signing)}"
        self.signing[kid] = ("ES256", ec.generate_private_key(ec.SECP256R1()))
        return kid

    def jwks(self) -> dict:
        keys = []
        for kid, (alg, key) in self.signing.items():
            public = key.public_key().public_numbers()
            if alg == "RS256":
                keys.append({"kty": "RSA", "kid": kid, "use": "sig", "alg": alg, "n": uint(public.n), "e": uint(public.e)})
            else:
                size = 32
                keys.append({
                    "kty": "EC", "kid": kid, "use": "sig", "alg": alg, "crv": "P-256",
                    "x": b64(public.x.to_bytes(size, "big")), "y": b64(public.y.to_bytes(size, "big")),
                })
        return {"keys": keys}

    def sign(self, claims: dict, kid: str, forge: str | None) -> str:
        if forge == "none":
            header = {"alg": "none", "typ": "JWT"}
            return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}."
        if forge == "hs256-public":
            # The classic key confusion: HMAC keyed with the published RSA key. PyJWT refuses to
            # do this, so it is done by hand.
            public = self.signing["rsa-1"][1].public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            header = {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
            message = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
            signature = hmac.new(public, message.encode(), hashlib.sha256).digest()
            return f"{message}.{b64(signature)}"
        if forge == "unpublished":
            alg, key = self.unpublished
            return jwt.encode(claims, key, algorithm=alg, headers={"kid": "ghost"})
        alg, key = self.signing[kid]
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


class Provider:
    """In-memory OAuthAuthorizationServerProvider that approves at once and issues JWTs."""

    def __init__(self, issuer: str, keys: Keys):
        self.issuer = issuer
        self.keys = keys
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}

    def access_token(self, aud: str | None, scopes: list[str], kid: str = "rsa-1") -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer, "sub": "tester", "aud": aud, "scope": " ".join(scopes),
            "iat": now, "exp": now + 300, "client_id": "test-client",
        }
        return self.keys.sign(claims, kid, None)

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        refresh = secrets.token_urlsafe(32)
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client.client_id, scopes=authorization_code.scopes,
            resource=authorization_code.resource,
        )
        return OAuthToken(
            access_token=self.access_token(authorization_code.resource, authorization_code.scopes),
            token_type="Bearer",
            expires_in=300,
            scope=" ".join(authorization_code.scopes),
            refresh_token=refresh,
        )

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh_tokens.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        if refresh_token.token not in self.refresh_tokens:
            raise TokenError(error="invalid_grant", error_description="unknown refresh token")
        return OAuthToken(
            access_token=self.access_token(refresh_token.resource, scopes or refresh_token.scopes),
            token_type="Bearer",
            expires_in=300,
            scope=" ".join(scopes or refresh_token.scopes),
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        return None

    async def revoke_token(self, token) -> None:
        return None


def app(issuer: str) -> Starlette:
    keys = Keys()
    base = issuer.rstrip("/")
    provider = Provider(issuer, keys)
    routes = create_auth_routes(
        provider,
        issuer_url=AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES),
    )

    async def openid_configuration(_request: Request):
        return JSONResponse({
            "issuer": issuer,
            "jwks_uri": f"{base}/jwks",
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        })

    async def jwks(_request: Request):
        keys.fetches += 1
        return JSONResponse(keys.jwks())

    async def mint(request: Request):
        body = await request.json()
        now = int(time.time())
        claims = {
            "iss": issuer, "sub": "tester", "aud": body.get("aud"),
            "scope": body.get("scope", "mcp:read"), "iat": now, "exp": now + 300,
        }
        claims.update(body.get("claims", {}))
        for name in body.get("drop", []):
            claims.pop(name, None)
        token = keys.sign(claims, body.get("kid", "rsa-1"), body.get("forge"))
        return JSONResponse({"token": token})

    async def rotate(_request: Request):
        return JSONResponse({"kid": keys.rotate()})

    async def stats(_request: Request):
        return JSONResponse({"jwks_fetches": keys.fetches})

    routes += [
        Route("/.well-known/openid-configuration", openid_configuration),
        Route("/jwks", jwks),
        Route("/test/mint", mint, methods=["POST"]),
        Route("/test/rotate", rotate, methods=["POST"]),
        Route("/test/stats", stats),
    ]
    return Starlette(routes=routes)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    opts = parser.parse_args()
    # As the SDK's metadata names it (pydantic writes a root URL with its slash): one spelling
    # everywhere, since clients compare issuers character for character.
    issuer = f"http://127.0.0.1:{opts.port}/"
    # uvicorn closes an idle connection after 5 s, the moment the SDK's HTTP client stops
    # reusing one (its pool's keep-alive expiry is 5 s too): a request sent on a pooled
    # connection as uvicorn hangs it up fails with "Server disconnected without sending a
    # response". Idle connections here outlive the pool's.
    uvicorn.run(
        app(issuer),
        host="127.0.0.1",
        port=opts.port,
        log_level="warning",
        timeout_keep_alive=120,
    )


if __name__ == "__main__":
    main()
