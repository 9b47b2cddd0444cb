// A real OpenID Connect provider for the dashboard's sign-in tests: panva's oidc-provider
// (OpenID certified), pinned in package-lock.json. Its built-in login page accepts any user
// name with any password; "alice" is in the group mcp-admins, a name beginning with "guest" in
// none, anyone else in "staff". The
// claims of the profile and groups scopes come from the userinfo endpoint, as the provider
// gives them by default for the code flow.
//
// With AGENT_REDIRECT_URI it also registers "agent-app" (secret "agent-app-secret"), an agent's
// application that gets JWT access tokens for the gateway (audience "mcplex", the "mcp" scope)
// on a person's behalf through the code flow with a `resource` (RFC 8707).
//
// Two agents, "agent-one" and "agent-two" (secrets "<name>-secret"), get their own JWTs for the
// gateway with client credentials (their subject is their client id).
//
// With UPSTREAM_RESOURCE set (an MCP server's URL, whose audience is "upstream"), a client
// "gateway" (secret "gateway-secret") may also exchange an access token this provider issued for
// the gateway (audience "mcplex") for one for that server with the same subject: RFC 8693's
// token exchange, which oidc-provider leaves to a registered grant.
//
// Usage: node oidc_provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI [AGENT_REDIRECT_URI]
// Prints "listening <issuer>" once it accepts connections.
import Provider from "oidc-provider";
import * as jose from "jose";

const [port, clientId, clientSecret, redirectUri, agentRedirectUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const upstreamResource = process.env.UPSTREAM_RESOURCE;
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
    ...["agent-one", "agent-two"].map((name) => ({
      client_id: name,
      client_secret: `${name}-secret`,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: "client_secret_basic",
    })),
    ...(upstreamResource
      ? [
          {
            client_id: "gateway",
            client_secret: "gateway-secret",
            grant_types: ["client_credentials", TOKEN_EXCHANGE],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: "client_secret_basic",
          },
        ]
      : []),
    ...(agentRedirectUri
      ? [
          {
            client_id: "agent-app",
            client_secret: "agent-app-secret",
            redirect_uris: [agentRedirectUri],
            grant_types: ["authorization_code"],
            response_types: ["code"],
            token_endpoint_auth_method: "client_secret_basic",
          },
        ]
      : []),
  ],
  claims: {
    openid: ["sub"],
    profile: ["name", "preferred_username"],
    groups: ["groups"],
  },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          name: id,
          preferred_username: id,
          groups: id === "alice" ? ["mcp-admins"] : id.startsWith("guest") ? [] : ["staff"],
        };
      },
    };
  },
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    // A token asked for with a `resource` is a JWT for the gateway; without one (the dashboard's
    // sign-in), an opaque token for the userinfo endpoint, as before.
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: "mcp",
        audience: resource === upstreamResource ? "upstream" : "mcplex",
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
  cookies: { keys: ["mcplex-test-only-cookie-key"] },
});

if (upstreamResource) {
  // The subject token must be this provider's, for the gateway; what comes back is for the
  // upstream, with the same subject.
  provider.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const { subject_token: subjectToken, subject_token_type: subjectType, resource } = ctx.oidc.params;
      const refuse = (error, description) => {
        ctx.status = 400;
        ctx.body = { error, error_description: description };
      };
      if (subjectType !== ACCESS_TOKEN_TYPE) return refuse("invalid_request", "subject_token_type");
      if (resource !== upstreamResource) return refuse("invalid_target", "resource");
      let payload;
      try {
        const keys = jose.createLocalJWKSet(await (await fetch(`${issuer}/jwks`)).json());
        ({ payload } = await jose.jwtVerify(subjectToken, keys, { issuer, audience: "mcplex" }));
      } catch (error) {
        return refuse("invalid_grant", String(error.message));
      }
      const resourceServer = new provider.ResourceServer(resource, {
        scope: "mcp",
        audience: "upstream",
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      });
      const token = new provider.AccessToken({
        accountId: payload.sub,
        client: ctx.oidc.client,
        grantId: "token-exchange",
        gty: "token_exchange",
        scope: "mcp",
        resourceServer,
      });
      const value = await token.save();
      ctx.body = {
        access_token: value,
        issued_token_type: ACCESS_TOKEN_TYPE,
        token_type: "Bearer",
        expires_in: token.expiration,
        scope: "mcp",
      };
    },
    ["subject_token", "subject_token_type", "requested_token_type", "resource", "audience", "scope"],
  );
}

// A fault of the provider's own shows in the test's output, not only as "server_error".
provider.on("server_error", (_ctx, error) => console.error("oidc-provider server_error:", error));

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`listening ${issuer}`);
});
