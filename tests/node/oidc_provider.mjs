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
// Usage: node oidc_provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI [AGENT_REDIRECT_URI]
// Prints "listening <issuer>" once it accepts connections.
import Provider from "oidc-provider";

const [port, clientId, clientSecret, redirectUri, agentRedirectUri] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

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
      getResourceServerInfo: () => ({
        scope: "mcp",
        audience: "mcplex",
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
  cookies: { keys: ["mcplex-test-only-cookie-key"] },
});

// A fault of the provider's own shows in the test's output, not only as "server_error".
provider.on("server_error", (_ctx, error) => console.error("oidc-provider server_error:", error));

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`listening ${issuer}`);
});
