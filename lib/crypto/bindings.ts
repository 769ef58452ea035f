// The binding strings some sealed values are sealed under, kept apart from the modules that use
// them so that the inventory of sealed columns (lib/instance/sealed-rows.ts), which boot loads,
// does not pull in the S3 client or the database engines.

/** A database's passwords (JSON) in `app_databases.password_sealed`. */
export const dbBinding = (id: string) => `db:${id}:password`;

/** An S3 secret access key in `backup_configs` or `instance_backup`. */
export const s3Binding = (id: string) => `backup:${id}:s3`;

/** An uploaded certificate's private key in `domain_certificates.key_sealed`. */
export const certificateKeyBinding = (domainId: string) => `domain:${domainId}:certificate-key`;

/** The password of the cluster registry the control plane runs, in `settings` (lib/cluster/registry.ts). */
export const REGISTRY_PASSWORD_BINDING = 'cluster-registry:password';
export const REGISTRY_PASSWORD_SETTING = 'cluster_registry_password';
