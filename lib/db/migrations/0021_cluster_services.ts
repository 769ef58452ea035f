import type { Kysely, Migration } from 'kysely';

// Cluster mode (SVC_CLUSTER=swarm): per service, how many replicas run and where (placement
// constraints as JSON, checked on input), and the node a volume-backed service was pinned to at
// its first deploy (its named volumes live on that node only). All null on a single host.
export const migration: Migration = {
  async up(db: Kysely<any>) {
    await db.schema.alterTable('app_services').addColumn('replicas', 'integer').execute();
    await db.schema.alterTable('app_services').addColumn('placement', 'text').execute();
    await db.schema.alterTable('app_services').addColumn('pinned_node', 'text').execute();
  },
};
