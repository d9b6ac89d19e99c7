-- Option Sets: app-owned lists synced by the customer's system, read by SDKs.
-- Items are versioned rows (valid_from / valid_to set versions) so a read pinned to a
-- version sees exactly that version's content, however many syncs commit meanwhile.

-- unaccent() is only STABLE (its dictionary could change); pinning the dictionary makes the
-- fold safe to declare IMMUTABLE, which a generated column and its index require.
CREATE OR REPLACE FUNCTION option_fold(t text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, t)) $$;

CREATE TABLE option_sets (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  set_id text NOT NULL,
  version integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, set_id)
);

CREATE SEQUENCE option_item_seq;

CREATE TABLE option_items (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  set_id text NOT NULL,
  -- Internal identity of an item across its versions.
  item_id bigint NOT NULL,
  -- The customer's optional stable key (`id` on the wire).
  ext_id text,
  value text NOT NULL,
  label text NOT NULL,
  sort_order double precision NOT NULL DEFAULT 0,
  option_data jsonb,
  archived boolean NOT NULL DEFAULT false,
  -- Visible to reads at version v when valid_from <= v AND (valid_to IS NULL OR valid_to > v).
  valid_from integer NOT NULL,
  valid_to integer,
  search_text text GENERATED ALWAYS AS (option_fold(value || ' ' || label)) STORED,
  PRIMARY KEY (app_id, set_id, item_id, valid_from)
);

-- Current rows: one per item, values unique (archived items keep theirs so answers still resolve).
CREATE UNIQUE INDEX option_items_current_item ON option_items (app_id, set_id, item_id) WHERE valid_to IS NULL;
CREATE UNIQUE INDEX option_items_current_value ON option_items (app_id, set_id, value) WHERE valid_to IS NULL;
CREATE UNIQUE INDEX option_items_current_ext ON option_items (app_id, set_id, ext_id) WHERE valid_to IS NULL AND ext_id IS NOT NULL;
-- Keyset paging in read order.
CREATE INDEX option_items_order ON option_items (app_id, set_id, sort_order, value);
-- Accent- and case-insensitive substring search.
CREATE INDEX option_items_search ON option_items USING gin (search_text gin_trgm_ops);
