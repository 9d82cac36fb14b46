// The pure side of --secrets encrypt: recipients, .sops.yaml creation rules as sops reads them, and
// the digest part that makes a rotation render every Secret again.
import { describe, expect, it } from 'vitest';
import { checkAgeRecipients, splitRecipientList } from '../src/secrets/age-recipients.js';
import { resolveSecretEncryption, recipientsForFile, secretsDigestPart } from '../src/secrets/secret-encryption.js';
import { parseSopsConfig } from '../src/secrets/sops-config.js';

// Recipients of fixed identities (age-keygen output), so the tests need no key generation.
const ALICE = 'age1lj6msxhfwqjumsn6xg5ul68pe9vye2tqnsyytkcksct4zs79ef3qyqwd2q';
const BOB = 'age1ulru50a52pyyu7wpd7yq5pl04rn5vw6um48zm00lsejcwvukpgcqxv9qrj';

describe('checkAgeRecipients', () => {
  it('accepts X25519 recipients, sorted and without duplicates', () => {
    expect(checkAgeRecipients([BOB, ALICE, ` ${BOB} `], '--age-recipient')).toEqual([ALICE, BOB].sort());
  });

  it('refuses a recipient with a wrong checksum or shape, naming where it came from', () => {
    const flipped = `${ALICE.slice(0, 10)}${ALICE[10] === 'q' ? 'p' : 'q'}${ALICE.slice(11)}`;
    expect(() => checkAgeRecipients([flipped], '--age-recipient')).toThrow(
      /--age-recipient: ".*" is not a valid age recipient \(Invalid checksum/,
    );
    expect(() => checkAgeRecipients(['AGE-SECRET-KEY-1QQQ'], 'CLUSTERSTACK_AGE_RECIPIENTS')).toThrow(
      /CLUSTERSTACK_AGE_RECIPIENTS: "AGE-SECRET-KEY-1QQQ" is not an age X25519 recipient/,
    );
  });

  it('splits lists as sops does (commas, white space, trailing commas)', () => {
    expect(splitRecipientList(`${ALICE}, ${BOB},\n`)).toEqual([ALICE, BOB]);
  });
});

describe('parseSopsConfig', () => {
  const config = `creation_rules:
  - path_regex: ^management/
    age: ${ALICE}
  - path_regex: secret-.*\\.yaml$
    age:
      - ${BOB}
      - ${ALICE}
  - age: ${BOB}
`;

  it('takes the first rule that matches a path, a rule without path_regex matching all', () => {
    const encryption = resolveSecretEncryption(
      { recipients: [], recipientsOrigin: '--age-recipient', sopsConfig: { text: config, origin: '.sops.yaml' } },
      undefined,
    );
    expect(recipientsForFile(encryption, 'management/ns/rel/secret-a.yaml')).toEqual([ALICE]);
    expect(recipientsForFile(encryption, 'clusters/ns/c/s/secret-a.yaml')).toEqual([ALICE, BOB].sort());
    expect(recipientsForFile(encryption, 'clusters/ns/c/s/other.yaml')).toEqual([BOB]);
  });

  it('prefers recipients given explicitly, then a given .sops.yaml, then the target’s', () => {
    expect(
      resolveSecretEncryption(
        { recipients: [BOB], recipientsOrigin: '--age-recipient', sopsConfig: { text: config, origin: 'x' } },
        config,
      ).rules,
    ).toEqual([{ recipients: [BOB] }]);
    expect(resolveSecretEncryption({ recipients: [], recipientsOrigin: '--age-recipient' }, config).origin).toBe(
      'the .sops.yaml of the target',
    );
    expect(() => resolveSecretEncryption({ recipients: [], recipientsOrigin: '--age-recipient' }, undefined)).toThrow(
      /needs age recipients/,
    );
  });

  it('refuses what it cannot use: no rules, bad regex, other key types, a matching rule without age, no match', () => {
    expect(() => parseSopsConfig('creation_rules: []\n', '.sops.yaml')).toThrow(/has no creation_rules list/);
    expect(() => parseSopsConfig('creation_rules:\n  - path_regex: "("\n    age: x\n', '.sops.yaml')).toThrow(
      /creation_rules\[0\]: path_regex "\(" is not a regular expression/,
    );
    expect(() => parseSopsConfig('creation_rules:\n  - kms: arn:aws:kms:x\n', '.sops.yaml')).toThrow(
      /uses kms; clusterstack encrypts for age recipients only/,
    );
    const rules = parseSopsConfig(
      `creation_rules:\n  - path_regex: ^a/\n  - path_regex: ^b/\n    age: ${ALICE}\n`,
      '.sops.yaml',
    );
    expect(() => recipientsForFile({ rules, origin: '.sops.yaml' }, 'a/x.yaml')).toThrow(
      /creation_rules\[0\] matches a\/x.yaml but names no age recipients/,
    );
    expect(() => recipientsForFile({ rules, origin: '.sops.yaml' }, 'c/x.yaml')).toThrow(
      /no creation rule matches c\/x.yaml/,
    );
  });
});

describe('secretsDigestPart', () => {
  it('is the bare policy unless encrypting, and changes with the recipients', () => {
    expect(secretsDigestPart('refuse', undefined)).toBe('refuse');
    const a = secretsDigestPart('encrypt', { rules: [{ recipients: [ALICE] }], origin: 'x' });
    const b = secretsDigestPart('encrypt', { rules: [{ recipients: [BOB] }], origin: 'x' });
    expect(JSON.stringify(a)).not.toBe(JSON.stringify(b));
    expect(JSON.stringify(a)).toBe(
      JSON.stringify(secretsDigestPart('encrypt', { rules: [{ recipients: [ALICE] }], origin: 'another origin' })),
    );
  });
});
