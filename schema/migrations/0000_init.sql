CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`default_workspace_id` text,
	`exempt_free_limits` integer DEFAULT false NOT NULL,
	`authority_version` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `admin_audit` (
	`id` text PRIMARY KEY NOT NULL,
	`action` text NOT NULL,
	`account_id` text NOT NULL,
	`actor` text NOT NULL,
	`reason` text,
	`detail` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `admin_audit_account` ON `admin_audit` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`hash` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`label` text NOT NULL,
	`is_management` integer DEFAULT false NOT NULL,
	`is_provisioning` integer DEFAULT false NOT NULL,
	`is_free_tier` integer DEFAULT false NOT NULL,
	`disabled` integer DEFAULT false NOT NULL,
	`expires_at` text,
	`limit_micros` integer,
	`limit_reset` text,
	`include_byok_in_limit` integer DEFAULT false NOT NULL,
	`allowed_data_regions` text NOT NULL,
	`creator_user_id` text,
	`external_user` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `api_keys_account` ON `api_keys` (`account_id`);--> statement-breakpoint
CREATE TABLE `byok_credentials` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`provider` text NOT NULL,
	`name` text NOT NULL,
	`label` text NOT NULL,
	`ciphertext` text NOT NULL,
	`iv` text NOT NULL,
	`key_version` text NOT NULL,
	`disabled` integer DEFAULT false NOT NULL,
	`is_byok_only` integer DEFAULT false NOT NULL,
	`is_fallback` integer DEFAULT false NOT NULL,
	`is_required` integer DEFAULT false NOT NULL,
	`sort_order` integer DEFAULT 0 NOT NULL,
	`allowed_api_key_hashes` text,
	`allowed_models` text,
	`allowed_user_ids` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`declared_zdr` integer
);
--> statement-breakpoint
CREATE INDEX `byok_workspace` ON `byok_credentials` (`workspace_id`,`sort_order`);--> statement-breakpoint
CREATE TABLE `credit_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`amount_micros` integer NOT NULL,
	`note` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `credit_grants_account` ON `credit_grants` (`account_id`);--> statement-breakpoint
CREATE TABLE `endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`model_slug` text NOT NULL,
	`provider` text NOT NULL,
	`adapter` text NOT NULL,
	`upstream_model` text NOT NULL,
	`base_urls` text NOT NULL,
	`pricing` text NOT NULL,
	`capabilities` text NOT NULL,
	`policies` text NOT NULL,
	`regions` text NOT NULL,
	`exempt_free_limits` integer DEFAULT false NOT NULL,
	`catalog_version` text NOT NULL,
	`timeouts` text DEFAULT '{}' NOT NULL,
	`position` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `endpoints_model` ON `endpoints` (`model_slug`);--> statement-breakpoint
CREATE TABLE `generations` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`modality` text NOT NULL,
	`api_type` text,
	`model` text NOT NULL,
	`provider` text,
	`endpoint_id` text,
	`is_byok` integer DEFAULT false NOT NULL,
	`status` text NOT NULL,
	`usage` text NOT NULL,
	`cost_micros` integer DEFAULT 0 NOT NULL,
	`region` text NOT NULL,
	`metadata` text,
	`user` text,
	`flags` text,
	`attempts` text,
	`error` text,
	`block_id` text,
	`session_id` text,
	`streamed` integer,
	`finish_reason` text,
	`native_finish_reason` text,
	`generation_ms` integer,
	`upstream_id` text,
	`http_referer` text,
	`user_agent` text,
	`preset_id` text,
	`request_id` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `generations_key` ON `generations` (`key_hash`,`created_at`);--> statement-breakpoint
CREATE INDEX `generations_block` ON `generations` (`block_id`);--> statement-breakpoint
CREATE INDEX `generations_account` ON `generations` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `guardrail_key_assignments` (
	`guardrail_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`assigned_by` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	PRIMARY KEY(`guardrail_id`, `key_hash`)
);
--> statement-breakpoint
CREATE INDEX `gka_key` ON `guardrail_key_assignments` (`key_hash`);--> statement-breakpoint
CREATE TABLE `guardrail_member_assignments` (
	`guardrail_id` text NOT NULL,
	`user_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`assigned_by` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	PRIMARY KEY(`guardrail_id`, `user_id`)
);
--> statement-breakpoint
CREATE INDEX `gma_user` ON `guardrail_member_assignments` (`user_id`);--> statement-breakpoint
CREATE TABLE `guardrails` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`limit_micros` integer,
	`reset_interval` text,
	`include_byok_in_budgets` integer DEFAULT false NOT NULL,
	`allowed_data_regions` text,
	`allowed_models` text,
	`ignored_models` text,
	`allowed_providers` text,
	`ignored_providers` text,
	`content_filter_builtins` text,
	`content_filters` text,
	`enable_free_model_publication` integer DEFAULT false NOT NULL,
	`enable_free_model_training` integer DEFAULT false NOT NULL,
	`enable_paid_model_training` integer DEFAULT false NOT NULL,
	`enforce_zdr` integer,
	`enforce_zdr_vendor_a` integer DEFAULT false NOT NULL,
	`enforce_zdr_vendor_b` integer DEFAULT false NOT NULL,
	`enforce_zdr_vendor_c` integer DEFAULT false NOT NULL,
	`enforce_zdr_vendor_d` integer DEFAULT false NOT NULL,
	`enforce_zdr_other` integer DEFAULT false NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `guardrails_workspace` ON `guardrails` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `members` (
	`workspace_id` text NOT NULL,
	`user_id` text NOT NULL,
	`role` text DEFAULT 'member' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	PRIMARY KEY(`workspace_id`, `user_id`)
);
--> statement-breakpoint
CREATE TABLE `models` (
	`slug` text PRIMARY KEY NOT NULL,
	`canonical_slug` text NOT NULL,
	`name` text NOT NULL,
	`maker` text NOT NULL,
	`modality` text NOT NULL,
	`is_free` integer DEFAULT false NOT NULL,
	`description` text,
	`details` text NOT NULL,
	`catalog_version` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `preset_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`preset_id` text NOT NULL,
	`version` integer NOT NULL,
	`config` text NOT NULL,
	`system_prompt` text,
	`creator_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `preset_versions_preset_version` ON `preset_versions` (`preset_id`,`version`);--> statement-breakpoint
CREATE TABLE `presets` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`status` text DEFAULT 'active' NOT NULL,
	`status_updated_at` text,
	`creator_user_id` text NOT NULL,
	`designated_version_id` text,
	`latest_version` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `presets_workspace_slug` ON `presets` (`workspace_id`,`slug`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`email` text NOT NULL,
	`name` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `video_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`model` text NOT NULL,
	`provider` text,
	`endpoint_id` text,
	`status` text NOT NULL,
	`is_byok` integer DEFAULT false NOT NULL,
	`callback_url` text,
	`idempotency_key` text,
	`request_hash` text,
	`generation_id` text,
	`cost_micros` integer,
	`error` text,
	`region` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `video_jobs_idempotency` ON `video_jobs` (`key_hash`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`job_id` text NOT NULL,
	`webhook_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`status_code` integer,
	`error` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_job` ON `webhook_deliveries` (`job_id`,`attempt`);--> statement-breakpoint
CREATE TABLE `workspaces` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`default_guardrail_id` text NOT NULL,
	`video_webhook_url` text,
	`webhook_secret_ciphertext` text,
	`webhook_secret_previous_ciphertext` text,
	`webhook_secret_rotated_at` text,
	`deleted_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_account_slug` ON `workspaces` (`account_id`,`slug`);