// The publisher for the chosen output, loading only its own modules: a directory needs no git,
// GitHub or registry client, and a run that ends without rendering is mostly start-up.
import path from 'node:path';
import type { Publisher } from '../../gitops/publisher.js';
import type { Config } from '../config.js';
import { checkOutputSettings, type OutputSettings, type PublisherGuards } from './output-settings.js';

/** What createOutputPublisher (output-publisher.ts) gives for `settings`, with only that publisher loaded. */
export async function openOutputPublisher(
  settings: OutputSettings,
  config: Readonly<Config>,
  cwd: string,
  messageTemplate?: string,
  guards: PublisherGuards = {},
): Promise<Publisher> {
  checkOutputSettings(settings);
  if (settings.output) {
    const { DirectoryPublisher } = await import('../../gitops/directory-publisher.js');
    return new DirectoryPublisher(path.resolve(cwd, settings.output), {
      adopt: guards.adoptOutput ?? false,
      protectedPaths: guards.protectedPaths ?? [],
    });
  }
  const { createOutputPublisher } = await import('./output-publisher.js');
  return createOutputPublisher(settings, config, cwd, messageTemplate, guards);
}
