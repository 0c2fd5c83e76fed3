package views

// opsText is the text of the operations jobs: the SQLite backup on the
// jobs pages, and what its runs say.
var opsText = text{
	"jobs.name.backup": {"数据库备份", "Database backup"},
	"jobs.desc.backup": {
		"用 VACUUM INTO 把 SQLite 数据库复制到备份目录（服务照常写入，不受影响），文件名带 UTC 时间，只保留最新的几个。恢复步骤见 docs/backup-and-upgrade.md。",
		"Copies the SQLite database into the backup directory with VACUUM INTO (the server keeps writing meanwhile), named by the UTC time, keeping only the newest few. docs/backup-and-upgrade.md says how to restore one.",
	},
	"say.backup": {"已写入备份 %[1]s（%[2]s 字节）；删除较旧的备份 %[3]s 个，保留最新的 %[4]s 个",
		"wrote %[1]s (%[2]s bytes); removed %[3]s older backups, keeping the newest %[4]s"},
}
