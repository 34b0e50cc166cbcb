"""mqadmin: RocketMQ name server and operator CLI."""
