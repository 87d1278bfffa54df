// The SQLite state file's schema, as the migrations that build it: the
// migration for version v takes a file from schema v to v + 1, all of them
// in order one from an empty file to kSchemaVersion (sqlite_state_store.h).
// Never edit one that has shipped; append a new one and bump kSchemaVersion.
// docs/state.md describes the schema.
#pragma once

namespace canhazgpu::store {

// The SQL of the migration from schema `version` to `version + 1`;
// 0 <= version < kSchemaVersion.
const char* SqliteMigration(int version);

}  // namespace canhazgpu::store
