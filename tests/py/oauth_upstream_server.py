"""An OAuth-protected MCP server for mcplex's tests, on the official Python SDK.

The SDK does the protocol: `MCPServer` with `AuthSettings` serves the protected resource
metadata (RFC 9728), the authorization server metadata (RFC 8414), dynamic client registration
(RFC 7591), /authorize, /token (authorization code with PKCE, refresh) and the bearer check on
/mcp (401 with `WWW-Authenticate: Bearer resource_metadata=...`). Ours is only the provider: an
in-memory one that approves every authorization at once (no person), issues access tokens that
live ACCESS_TTL seconds, and rotates refresh tokens (each one works once).

The SDK's token endpoint has no client credentials grant, so a small ASGI layer in front of it
answers `grant_type=client_credentials` for the one client CC_CLIENT_ID / CC_CLIENT_SECRET.

For the tests' faults and checks (under /test/, never part of OAuth):
  POST /test/revoke       every access and refresh token stops working (refresh: invalid_grant)
  POST /test/expire       every access token stops working (refresh still works)
  GET  /test/stats        counts of grants and the bearer tokens /mcp was shown
  POST /test/echo         from now on /mcp answers 502 with the request's Authorization header
                          in its body (a broken proxy in front of the server)
Variables: PORT, ACCESS_TTL (default 3600), CC_CLIENT_ID, CC_CLIENT_SECRET,
REFUSE_REGISTRATION=1 (registration answers 400), BROKEN_METADATA=1 (the authorization
server's metadata is not JSON).
"""

import base64
import json
import os
import secrets
import time
import urllib.parse

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    RegistrationError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(os.environ.get("PORT", "0"))
BASE = f"http://127.0.0.1:{PORT}"
ACCESS_TTL = int(os.environ.get("ACCESS_TTL", "3600"))
CC_CLIENT_ID = os.environ.get("CC_CLIENT_ID")
CC_CLIENT_SECRET = os.environ.get("CC_CLIENT_SECRET")

ECHO = {"on": False}
STATS = {"codes": 0, "refreshes": 0, "client_credentials": 0, "registrations": 0, "bearers": []}


class Provider:
    """Approves at once; short-lived access tokens; refresh tokens rotate."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        if os.environ.get("REFUSE_REGISTRATION") == "1":
            raise RegistrationError(error="invalid_client_metadata", error_description="registration is closed")
        STATS["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
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

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        STATS["codes"] += 1
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource, refresh=True)

    async def load_refresh_token(self, client, refresh_token):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        # Rotation: the refresh token just used never works again.
        self.refresh.pop(refresh_token.token, None)
        STATS["refreshes"] += 1
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource, refresh=True)

    async def load_access_token(self, token):
        access = self.access.get(token)
        if access is None or (access.expires_at and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def issue(self, client_id, scopes, resource, refresh):
        access = secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL,
            resource=resource,
        )
        answer = OAuthToken(access_token=access, token_type="Bearer", expires_in=ACCESS_TTL, scope=" ".join(scopes) or None)
        if refresh:
            token = secrets.token_urlsafe(32)
            self.refresh[token] = RefreshToken(token=token, client_id=client_id, scopes=scopes, resource=resource)
            answer.refresh_token = token
        return answer


provider = Provider()
server = MCPServer(
    "oauth-test",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(enabled=True),
        validate_token_resource=False,
    ),
)


@server.tool()
def whoami() -> str:
    """Says that the caller got in."""
    return "authorized"


def json_response(status, body):
    data = json.dumps(body).encode()
    return status, [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())], data


async def read_body(receive):
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def client_credentials(headers, form):
    authorization = headers.get(b"authorization", b"").decode()
    client_id = secret = None
    if authorization.lower().startswith("basic "):
        decoded = base64.b64decode(authorization[6:]).decode()
        client_id, _, secret = decoded.partition(":")
        client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
    if not CC_CLIENT_ID or client_id != CC_CLIENT_ID or secret != CC_CLIENT_SECRET:
        return json_response(401, {"error": "invalid_client"})
    STATS["client_credentials"] += 1
    scopes = form.get("scope", [""])[0].split()
    answer = provider.issue(client_id, scopes, form.get("resource", [None])[0], refresh=False)
    return json_response(200, answer.model_dump(exclude_none=True))


def wrap(app):
    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        headers = dict(scope["headers"])
        answer = None
        if path.startswith("/mcp") and b"authorization" in headers:
            STATS["bearers"].append(headers[b"authorization"].decode())
        if path == "/test/stats":
            answer = json_response(200, STATS)
        elif path == "/test/echo" and method == "POST":
            ECHO["on"] = True
            answer = json_response(200, {})
        elif path.startswith("/mcp") and ECHO["on"]:
            echoed = headers.get(b"authorization", b"").decode()
            answer = (502, [(b"content-type", b"text/plain")], f"bad gateway for {echoed}".encode())
        elif path == "/test/revoke" and method == "POST":
            provider.access.clear()
            provider.refresh.clear()
            answer = json_response(200, {})
        elif path == "/test/expire" and method == "POST":
            provider.access.clear()
            answer = json_response(200, {})
        elif path == "/.well-known/oauth-authorization-server" and os.environ.get("BROKEN_METADATA") == "1":
            answer = (200, [(b"content-type", b"application/json")], b"{not json")
        elif path == "/token" and method == "POST":
            body = await read_body(receive)
            form = urllib.parse.parse_qs(body.decode())
            if form.get("grant_type") == ["client_credentials"]:
                answer = client_credentials(headers, form)
            else:
                sent = False

                async def replay():
                    nonlocal sent
                    if sent:
                        return {"type": "http.disconnect"}
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}

                return await app(scope, replay, send)
        if answer is None:
            return await app(scope, receive, send)
        status, response_headers, data = answer
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": data})

    return asgi


if __name__ == "__main__":
    # Idle connections outlive the Python clients' 5 s pools (see oauth_server.py) and the
    # gateway's 90 s one.
    uvicorn.run(
        wrap(server.streamable_http_app()),
        host="127.0.0.1",
        port=PORT,
        log_level="warning",
        timeout_keep_alive=120,
    )
