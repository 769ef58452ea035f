// What the engine handle knows of stored registry credentials: an interface only. lib/registries/
// implements it over its rows; runtime/boot.ts hands it to the engine, so every pull, build and
// swarm service of this control plane uses the same store without taking it as a parameter.

/** A stored login for one registry, as the credential store hands it out. */
export interface RegistryLogin {
  id: string;
  /** The registry host as stored (`registry.example:5000`, `docker.io`). */
  host: string;
  /** What the engine is told the credentials are for (Docker Hub's is its v1 index URL). */
  serverAddress: string;
  username: string;
  password: string;
}

/** The credential store the engine handle carries (lib/registries/ makes it; boot wires it). */
export interface RegistryCredentials {
  /**
   * Throws (a reason naming the registry) when the reference's registry host resolves where the
   * engine is never sent: link-local addresses, the control plane's own endpoints.
   */
  admit(ref: string): Promise<void>;
  /** The login whose host matches the reference's registry (`docker.io` for unqualified names). */
  forReference(ref: string): Promise<RegistryLogin | null>;
  /** Records that a login was used (its `last_used_at`); failures to record are ignored. */
  used(id: string): Promise<void>;
}
