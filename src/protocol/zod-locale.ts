/**
 * @module protocol/zod-locale — zod's English messages for the `zod/mini` schemas of the protocol and the port.
 * `zod/mini` loads no locale (its issues would read "Invalid input"); full `zod` sets the English one when it is
 * imported, which the episode Worker never does (docs/design/episode-worker.md). Each module that declares `zod/mini`
 * schemas imports this one, so their messages are the same in every bundle and process.
 */
import { config } from "zod/mini";
import { en } from "zod/locales";

config(en());
