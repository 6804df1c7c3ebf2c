/// The static catalogue of box types: what each is called in the spec and how its payload is
/// laid out. One table, consulted by the tree parser and the renderers; no registries, no
/// class hierarchy.
public enum BoxCatalog {
    /// How a box's payload is structured.
    public enum Structure: Sendable, Hashable {
        /// Children only.
        case container
        /// Version and flags, then children.
        case fullContainer
        /// Version, flags, entry count, then sample entries (`stsd`).
        case sampleDescription
        /// Version, flags, entry count, then entry boxes (`dref`).
        case dataReference
        /// `meta`: a full box in ISO files, a plain container in QuickTime files.
        case meta
        /// A leaf that starts with version and flags.
        case fullLeaf
        /// A leaf without version and flags.
        case leaf
    }

    /// What the catalogue knows about one type.
    public struct Descriptor: Sendable, Hashable {
        /// The spec's class name (`MovieBox`, `ChunkOffsetBox`).
        public var name: String
        /// The payload structure.
        public var structure: Structure
    }

    /// The descriptor for `type`, or `nil` for an unknown type (kept raw).
    public static func descriptor(for type: FourCC) -> Descriptor? { table[type] }

    /// The boxes declared as one ``BoxModel`` each: parsed, dumped and written from their
    /// declaration. A new typed box is a new file and a row here.
    public static let models: [any BoxModel.Type] = [
        MovieHeaderBox.self, TrackHeaderBox.self, MediaHeaderBox.self, HandlerBox.self, EditListBox.self,
        MovieExtendsHeaderBox.self, TrackExtendsBox.self, MovieFragmentHeaderBox.self, TrackFragmentHeaderBox.self,
        TrackFragmentDecodeTimeBox.self, TrackRunBox.self, SegmentIndexBox.self, TrackFragmentRandomAccessBox.self,
        MovieFragmentRandomAccessOffsetBox.self,
        PixelAspectRatioBox.self, BitRateBox.self, ColourInformationBox.self,
        FileTypeBox.self, SegmentTypeBox.self,
        TimeToSampleBox.self, CompositionOffsetBox.self, SyncSampleBox.self, SampleToChunkBox.self, SampleSizeBox.self,
        CompactSampleSizeBox.self, ChunkOffsetBox.self, ChunkLargeOffsetBox.self, SampleDependencyTypeBox.self,
        AVCConfigurationBox.self, HEVCConfigurationBox.self, AV1CodecConfigurationBox.self, VPCodecConfigurationBox.self,
        ESDBox.self, OpusSpecificBox.self, AC3SpecificBox.self, EC3SpecificBox.self, ALACSpecificBox.self, FLACSpecificBox.self, MLPSpecificBox.self, IAConfigurationBox.self,
        OriginalFormatBox.self, SchemeTypeBox.self, SampleAuxiliaryInformationOffsetsBox.self, ItemLocationBox.self,
        MetadataValueBox.self, MetadataKeysBox.self, NeroChapterListBox.self, FieldHandlingBox.self,
        MasteringDisplayColourVolumeBox.self, ContentLightLevelBox.self, LocationInformationBox.self,
    ]

    /// The model declared for `type`, if any.
    public static func model(for type: FourCC) -> (any BoxModel.Type)? { modelTable[type] }

    private static let modelTable: [FourCC: any BoxModel.Type] = Dictionary(models.map { ($0.type, $0) }, uniquingKeysWith: { first, _ in first })

    private static let table: [FourCC: Descriptor] = {
        var t: [FourCC: Descriptor] = [:]
        func add(_ type: FourCC, _ name: String, _ structure: Structure) { t[type] = Descriptor(name: name, structure: structure) }
        for (type, name) in [
            ("moov", "MovieBox"), ("trak", "TrackBox"), ("edts", "EditBox"), ("mdia", "MediaBox"), ("minf", "MediaInformationBox"),
            ("dinf", "DataInformationBox"), ("stbl", "SampleTableBox"), ("mvex", "MovieExtendsBox"), ("moof", "MovieFragmentBox"),
            ("traf", "TrackFragmentBox"), ("mfra", "MovieFragmentRandomAccessBox"), ("udta", "UserDataBox"), ("tref", "TrackReferenceBox"),
            ("sinf", "ProtectionSchemeInfoBox"), ("schi", "SchemeInformationBox"), ("rinf", "RestrictedSchemeInfoBox"),
            ("ilst", "iTunesItemList"), ("wave", "QuickTimeSoundDescriptionExtension"), ("gmhd", "QuickTimeBaseMediaInformation"),
            ("tapt", "QuickTimeTrackApertureModeDimensions"), ("clip", "QuickTimeClipping"), ("matt", "QuickTimeTrackMatte"),
            ("iprp", "ItemPropertiesBox"), ("ipco", "ItemPropertyContainerBox"), ("meco", "AdditionalMetadataContainerBox"),
            ("strk", "SubTrackBox"), ("strd", "SubTrackDefinitionBox"), ("trgr", "TrackGroupBox"), ("sv3d", "SphericalVideoBox"),
            ("proj", "ProjectionBox"), ("moie", "MovieIdentificationBox"),
        ] as [(FourCC, String)] { add(type, name, .container) }
        add("meta", "MetaBox", .meta)
        add("stsd", "SampleDescriptionBox", .sampleDescription)
        add("dref", "DataReferenceBox", .dataReference)
        for (type, name) in [
            ("vmhd", "VideoMediaHeaderBox"),
            ("smhd", "SoundMediaHeaderBox"), ("nmhd", "NullMediaHeaderBox"), ("sthd", "SubtitleMediaHeaderBox"), ("url ", "DataEntryUrlBox"),
            ("urn ", "DataEntryUrnBox"), ("tenc", "TrackEncryptionBox"), ("pssh", "ProtectionSystemSpecificHeaderBox"),
            ("senc", "SampleEncryptionBox"), ("saiz", "SampleAuxiliaryInformationSizesBox"),
            ("sbgp", "SampleToGroupBox"), ("sgpd", "SampleGroupDescriptionBox"), ("iinf", "ItemInfoBox"),
            ("pitm", "PrimaryItemBox"), ("cslg", "CompositionToDecodeBox"), ("subs", "SubSampleInformationBox"), ("emsg", "DASHEventMessageBox"),
            ("prft", "ProducerReferenceTimeBox"), ("elng", "ExtendedLanguageBox"), ("kind", "KindBox"), ("cprt", "CopyrightBox"),
            ("ssix", "SubsegmentIndexBox"), ("leva", "LevelAssignmentBox"), ("trep", "TrackExtensionPropertiesBox"), ("stdp", "DegradationPriorityBox"),
            ("padb", "PaddingBitsBox"), ("stsh", "ShadowSyncSampleBox"), ("ID32", "ID3v2Box"),
        ] as [(FourCC, String)] { add(type, name, .fullLeaf) }
        for (type, name) in [
            ("mdat", "MediaDataBox"), ("free", "FreeSpaceBox"), ("skip", "FreeSpaceBox"),
            ("wide", "QuickTimeWideAtom"), ("uuid", "UserExtensionBox"), ("clap", "CleanApertureBox"),
            ("cmov", "QuickTimeCompressedMovie"), ("chan", "QuickTimeChannelLayout"),
            ("ftab", "FontTableBox"), ("vttC", "WebVTTConfigurationBox"), ("vlab", "WebVTTSourceLabelBox"),
            ("mean", "iTunesMeanBox"), ("name", "iTunesNameBox"),
            ("dvcC", "DOVIConfigurationBox"), ("dvvC", "DOVIConfigurationBox"),
        ] as [(FourCC, String)] { add(type, name, .leaf) }
        // Declared models name themselves; their structure follows from isFullBox.
        for model in models { add(model.type, model.specName, model.isFullBox ? .fullLeaf : .leaf) }
        return t
    }()
}
